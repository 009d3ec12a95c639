/*
 * acl.c — Kafka's ACL model and matcher (acl.h: AC1-AC5). Pure functions over bindings and
 * sets; no file, lock or connection. The decision walks the set once (O(bindings)); the
 * broker's hot path never calls it twice for the same question (authorizer.c's cache, AZ3).
 */
#include "tools/kafka/auth/acl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const resource_names[] = {
    "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN"};
static const char *const pattern_names[] = {"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"};
static const char *const op_names[] = {"UNKNOWN",
                                       "ANY",
                                       "ALL",
                                       "READ",
                                       "WRITE",
                                       "CREATE",
                                       "DELETE",
                                       "ALTER",
                                       "DESCRIBE",
                                       "CLUSTER_ACTION",
                                       "DESCRIBE_CONFIGS",
                                       "ALTER_CONFIGS",
                                       "IDEMPOTENT_WRITE"};
static const char *const perm_names[] = {"UNKNOWN", "ANY", "DENY", "ALLOW"};

#define NAME_OF(tab, i) ((size_t)(i) < sizeof(tab) / sizeof(tab[0]) ? tab[i] : "UNKNOWN")

const char *acl_resource_type_name(uint8_t t)
{
    return NAME_OF(resource_names, t);
}
const char *acl_pattern_type_name(uint8_t t)
{
    return NAME_OF(pattern_names, t);
}
const char *acl_operation_name(uint8_t op)
{
    return NAME_OF(op_names, op);
}
const char *acl_permission_name(uint8_t p)
{
    return NAME_OF(perm_names, p);
}

static uint8_t parse_in(const char *const *tab, size_t n, const char *s)
{
    if (!s)
        return 0;
    for (size_t i = 1; i < n; i++)
        if (strcasecmp(tab[i], s) == 0)
            return (uint8_t)i;
    return 0;
}
uint8_t acl_operation_parse(const char *s)
{
    return parse_in(op_names, sizeof(op_names) / sizeof(op_names[0]), s);
}
uint8_t acl_pattern_type_parse(const char *s)
{
    return parse_in(pattern_names, sizeof(pattern_names) / sizeof(pattern_names[0]), s);
}

static bool str_ok(const char *s)
{
    return s && s[0] && strlen(s) <= ACL_STR_MAX;
}

const char *acl_binding_invalid(const struct acl_binding *b)
{
    if (b->resource_type < ACL_RESOURCE_TOPIC || b->resource_type > ACL_RESOURCE_DELEGATION_TOKEN)
        return "resource type must be TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID or DELEGATION_TOKEN";
    if (b->pattern_type != ACL_PATTERN_LITERAL && b->pattern_type != ACL_PATTERN_PREFIXED)
        return "pattern type must be LITERAL or PREFIXED";
    if (b->operation < ACL_OP_ALL || b->operation > ACL_OP_IDEMPOTENT_WRITE)
        return "operation must be one of ALL..IDEMPOTENT_WRITE";
    if (b->permission != ACL_PERM_DENY && b->permission != ACL_PERM_ALLOW)
        return "permission must be DENY or ALLOW";
    if (!str_ok(b->name) || !str_ok(b->principal) || !str_ok(b->host))
        return "resource name, principal and host must be 1..1024 bytes";
    const char *colon = strchr(b->principal, ':');
    if (!colon || colon == b->principal || colon[1] == '\0')
        return "principal must be Type:name (e.g. User:alice)";
    if (b->resource_type == ACL_RESOURCE_CLUSTER &&
        (b->pattern_type != ACL_PATTERN_LITERAL || strcmp(b->name, ACL_CLUSTER_NAME) != 0))
        return "a CLUSTER resource is the literal name kafka-cluster";
    if (b->pattern_type == ACL_PATTERN_PREFIXED && strcmp(b->name, ACL_WILDCARD) == 0)
        return "a PREFIXED pattern cannot be *";
    return NULL;
}

bool acl_binding_equal(const struct acl_binding *a, const struct acl_binding *b)
{
    return a->resource_type == b->resource_type && a->pattern_type == b->pattern_type &&
           a->operation == b->operation && a->permission == b->permission &&
           strcmp(a->name, b->name) == 0 && strcmp(a->principal, b->principal) == 0 &&
           strcmp(a->host, b->host) == 0;
}

static bool prefix_of(const char *prefix, const char *s, size_t s_len)
{
    size_t n = strlen(prefix);
    return n <= s_len && memcmp(prefix, s, n) == 0;
}

/* AC1 */
static bool pattern_matches(const struct acl_binding *b, uint8_t type, const char *name,
                            size_t name_len)
{
    if (b->resource_type != type)
        return false;
    if (b->pattern_type == ACL_PATTERN_LITERAL)
        return strcmp(b->name, ACL_WILDCARD) == 0 ||
               (strlen(b->name) == name_len && memcmp(b->name, name, name_len) == 0);
    return b->pattern_type == ACL_PATTERN_PREFIXED && prefix_of(b->name, name, name_len);
}

bool acl_filter_matches(const struct acl_filter *f, const struct acl_binding *b)
{
    if (f->resource_type != ACL_RESOURCE_ANY && f->resource_type != b->resource_type)
        return false;
    switch (f->pattern_type) {
    case ACL_PATTERN_ANY:
        if (f->name && strcmp(f->name, b->name) != 0)
            return false;
        break;
    case ACL_PATTERN_MATCH:
        if (f->name && !pattern_matches(b, b->resource_type, f->name, strlen(f->name)))
            return false;
        break;
    default:
        if (f->pattern_type != b->pattern_type || (f->name && strcmp(f->name, b->name) != 0))
            return false;
    }
    if (f->principal && strcmp(f->principal, b->principal) != 0)
        return false;
    if (f->host && strcmp(f->host, b->host) != 0)
        return false;
    if (f->operation != ACL_OP_ANY && f->operation != b->operation)
        return false;
    return f->permission == ACL_PERM_ANY || f->permission == b->permission;
}

void acl_set_init(struct acl_set *s)
{
    memset(s, 0, sizeof(*s));
}

static void binding_free(struct acl_binding *b)
{
    free(b->name);
    free(b->principal);
    free(b->host);
}

void acl_set_free(struct acl_set *s)
{
    for (uint32_t i = 0; i < s->count; i++)
        binding_free(&s->v[i]);
    free(s->v);
    acl_set_init(s);
}

static int binding_copy(struct acl_binding *dst, const struct acl_binding *src)
{
    *dst = *src;
    dst->name = strdup(src->name);
    dst->principal = strdup(src->principal);
    dst->host = strdup(src->host);
    if (!dst->name || !dst->principal || !dst->host) {
        binding_free(dst);
        return -ENOMEM;
    }
    return 0;
}

int acl_set_add(struct acl_set *s, const struct acl_binding *b)
{
    for (uint32_t i = 0; i < s->count; i++)
        if (acl_binding_equal(&s->v[i], b))
            return 0;
    return acl_set_push(s, b);
}

int acl_set_push(struct acl_set *s, const struct acl_binding *b)
{
    if (s->count == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 16;
        struct acl_binding *v = realloc(s->v, (size_t)cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    int rc = binding_copy(&s->v[s->count], b);
    if (rc)
        return rc;
    s->count++;
    return 1;
}

int acl_set_remove(struct acl_set *s, const struct acl_filter *f, struct acl_set *removed)
{
    if (removed)
        for (uint32_t i = 0; i < s->count; i++)
            if (acl_filter_matches(f, &s->v[i]) && acl_set_push(removed, &s->v[i]) < 0)
                return -ENOMEM;
    uint32_t kept = 0;
    int n = 0;
    for (uint32_t i = 0; i < s->count; i++) {
        if (acl_filter_matches(f, &s->v[i])) {
            binding_free(&s->v[i]);
            n++;
        } else {
            s->v[kept++] = s->v[i];
        }
    }
    s->count = kept;
    return n;
}

int acl_set_copy(struct acl_set *dst, const struct acl_set *src)
{
    acl_set_init(dst);
    for (uint32_t i = 0; i < src->count; i++)
        if (acl_set_push(dst, &src->v[i]) < 0) {
            acl_set_free(dst);
            return -ENOMEM;
        }
    return 0;
}

/* AC2 without the operation. */
static bool entry_matches(const struct acl_binding *b, const char *principal, const char *host)
{
    return (strcmp(b->principal, principal) == 0 || strcmp(b->principal, ACL_WILDCARD_USER) == 0) &&
           (strcmp(b->host, ACL_WILDCARD) == 0 || strcmp(b->host, host) == 0);
}

/* AC4: does an ALLOW of `granted` allow `asked`? */
static bool allow_implies(uint8_t granted, uint8_t asked)
{
    if (granted == ACL_OP_ALL || granted == asked)
        return true;
    if (asked == ACL_OP_DESCRIBE)
        return granted == ACL_OP_READ || granted == ACL_OP_WRITE || granted == ACL_OP_DELETE ||
               granted == ACL_OP_ALTER;
    if (asked == ACL_OP_DESCRIBE_CONFIGS)
        return granted == ACL_OP_ALTER_CONFIGS;
    return false;
}

bool acl_authorize(const struct acl_set *s, const struct acl_request *rq, bool allow_if_no_acl)
{
    bool any = false, allowed = false;
    for (uint32_t i = 0; i < s->count; i++) {
        const struct acl_binding *b = &s->v[i];
        if (!pattern_matches(b, rq->resource_type, rq->name, rq->name_len))
            continue;
        any = true; /* AC3: a binding for the resource, whoever it names */
        if (!entry_matches(b, rq->principal, rq->host))
            continue;
        if (b->permission == ACL_PERM_DENY &&
            (b->operation == ACL_OP_ALL || b->operation == rq->operation))
            return false; /* AC3: DENY wins */
        if (b->permission == ACL_PERM_ALLOW && allow_implies(b->operation, rq->operation))
            allowed = true;
    }
    return any ? allowed : allow_if_no_acl;
}

bool acl_authorize_any(const struct acl_set *s, const char *principal, const char *host,
                       uint8_t type, uint8_t op, bool allow_if_no_acl)
{
    bool any = false, allowed = false;
    for (uint32_t i = 0; i < s->count; i++) {
        const struct acl_binding *b = &s->v[i];
        if (b->resource_type != type)
            continue;
        any = true;
        if (!entry_matches(b, principal, host) ||
            (b->operation != op && b->operation != ACL_OP_ALL))
            continue;
        if (b->permission == ACL_PERM_DENY &&
            ((b->pattern_type == ACL_PATTERN_LITERAL && strcmp(b->name, ACL_WILDCARD) == 0) ||
             (b->pattern_type == ACL_PATTERN_PREFIXED && b->name[0] == '\0')))
            return false; /* every resource of the type is denied */
        if (b->permission == ACL_PERM_ALLOW)
            allowed = true;
    }
    return any ? allowed : allow_if_no_acl;
}
