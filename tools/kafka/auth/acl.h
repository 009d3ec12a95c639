/*
 * acl.h — Kafka's ACL model and its matcher, as data and pure functions: an ACL binding
 * (resource pattern + access control entry), a filter over bindings (DescribeAcls,
 * DeleteAcls, `ringtail acl list|remove`), and the decision Kafka's authorizer makes for one
 * (principal, host, resource, operation) over a set of bindings. It owns the enum numbers
 * (Kafka's, as they go on the wire and on disk: docs/format.md J), the names (`READ`,
 * `PREFIXED`, ...) and the rules; it never touches a file, a lock or a connection (acl_store.c
 * and authorizer.c do).
 *
 * Kafka's rules (AclAuthorizer / StandardAuthorizer, Kafka 3.x), numbered here:
 *   AC1  A binding matches a resource of its type when its pattern is LITERAL and its name is
 *        the resource's name or "*", or PREFIXED and its name is a prefix of the resource's.
 *   AC2  An entry matches a request when its principal is the request's or "User:*", its host
 *        is the request's or "*", and (for the operation) AC4 holds.
 *   AC3  Super users are allowed everything. Otherwise, when no binding matches the resource
 *        (AC1, any principal, host or operation), the answer is allow_if_no_acl (Kafka's
 *        allow.everyone.if.no.acl.found, default false). Otherwise a matching DENY (AC2, its
 *        operation the one asked or ALL) denies; else a matching ALLOW allows; else deny.
 *   AC4  Implications, for ALLOW entries only: ALL allows every operation; READ, WRITE,
 *        DELETE and ALTER each allow DESCRIBE; ALTER_CONFIGS allows DESCRIBE_CONFIGS. A DENY
 *        denies only the operation it names (or ALL).
 *   AC5  A binding is valid for storing when its resource type is TOPIC, GROUP, CLUSTER,
 *        TRANSACTIONAL_ID or DELEGATION_TOKEN, its pattern LITERAL or PREFIXED, its operation
 *        ALL..IDEMPOTENT_WRITE, its permission DENY or ALLOW, its principal "Type:name" with
 *        both parts non-empty, its host and name non-empty; a CLUSTER binding is LITERAL
 *        "kafka-cluster"; a PREFIXED name is not "*". Strings are at most ACL_STR_MAX bytes.
 */
#ifndef RT_KAFKA_ACL_H
#define RT_KAFKA_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ACL_STR_MAX       1024u /* principal, host, resource name: bytes at most */
#define ACL_CLUSTER_NAME  "kafka-cluster"
#define ACL_WILDCARD      "*"
#define ACL_WILDCARD_USER "User:*"

/* org.apache.kafka.common.resource.ResourceType */
enum acl_resource_type {
    ACL_RESOURCE_UNKNOWN = 0,
    ACL_RESOURCE_ANY = 1,
    ACL_RESOURCE_TOPIC = 2,
    ACL_RESOURCE_GROUP = 3,
    ACL_RESOURCE_CLUSTER = 4,
    ACL_RESOURCE_TRANSACTIONAL_ID = 5,
    ACL_RESOURCE_DELEGATION_TOKEN = 6,
};

/* org.apache.kafka.common.resource.PatternType */
enum acl_pattern_type {
    ACL_PATTERN_UNKNOWN = 0,
    ACL_PATTERN_ANY = 1,
    ACL_PATTERN_MATCH = 2,
    ACL_PATTERN_LITERAL = 3,
    ACL_PATTERN_PREFIXED = 4,
};

/* org.apache.kafka.common.acl.AclOperation */
enum acl_operation {
    ACL_OP_UNKNOWN = 0,
    ACL_OP_ANY = 1,
    ACL_OP_ALL = 2,
    ACL_OP_READ = 3,
    ACL_OP_WRITE = 4,
    ACL_OP_CREATE = 5,
    ACL_OP_DELETE = 6,
    ACL_OP_ALTER = 7,
    ACL_OP_DESCRIBE = 8,
    ACL_OP_CLUSTER_ACTION = 9,
    ACL_OP_DESCRIBE_CONFIGS = 10,
    ACL_OP_ALTER_CONFIGS = 11,
    ACL_OP_IDEMPOTENT_WRITE = 12,
};

/* org.apache.kafka.common.acl.AclPermissionType */
enum acl_permission {
    ACL_PERM_UNKNOWN = 0,
    ACL_PERM_ANY = 1,
    ACL_PERM_DENY = 2,
    ACL_PERM_ALLOW = 3,
};

/* One ACL binding. Strings are NUL-terminated and owned by whoever made the binding (an
 * acl_set owns its bindings' strings). */
struct acl_binding {
    uint8_t resource_type; /* enum acl_resource_type */
    uint8_t pattern_type;  /* LITERAL or PREFIXED */
    uint8_t operation;     /* enum acl_operation */
    uint8_t permission;    /* DENY or ALLOW */
    char *name;            /* resource name */
    char *principal;       /* "User:alice", "User:*" */
    char *host;            /* "*" or an address */
};

/* A filter over bindings (Kafka's AclBindingFilter): NULL strings match any; ANY types match
 * any; pattern MATCH matches what AC1 would match for the name (literal equal or "*",
 * prefixed prefix of it). */
struct acl_filter {
    uint8_t resource_type, pattern_type, operation, permission;
    const char *name, *principal, *host;
};

/* An ordered set of bindings (no two equal). */
struct acl_set {
    struct acl_binding *v;
    uint32_t count, cap;
};

/* Names <-> numbers (Kafka's names, case-insensitive on input). Unknown: 0 / "UNKNOWN". */
const char *acl_resource_type_name(uint8_t t);
const char *acl_pattern_type_name(uint8_t t);
const char *acl_operation_name(uint8_t op);
const char *acl_permission_name(uint8_t p);
uint8_t acl_operation_parse(const char *s);
uint8_t acl_pattern_type_parse(const char *s);

/* NULL when the binding may be stored (rule AC5 above), else why not (a constant string). */
const char *acl_binding_invalid(const struct acl_binding *b);
bool acl_binding_equal(const struct acl_binding *a, const struct acl_binding *b);
bool acl_filter_matches(const struct acl_filter *f, const struct acl_binding *b);

void acl_set_init(struct acl_set *s);
void acl_set_free(struct acl_set *s);
/* Adds a copy of `b` unless an equal binding is there (O(bindings)). 1 added, 0 already
 * there, -ENOMEM. */
int acl_set_add(struct acl_set *s, const struct acl_binding *b);
/* Appends a copy of `b` without looking for an equal one (O(1) amortised: copies of a set, a
 * file's bindings). 1 or -ENOMEM. */
int acl_set_push(struct acl_set *s, const struct acl_binding *b);
/* Removes every binding `f` matches; their copies go to `removed` when not NULL. Returns the
 * number removed, or -ENOMEM (then nothing is removed). */
int acl_set_remove(struct acl_set *s, const struct acl_filter *f, struct acl_set *removed);
/* A deep copy (O(bindings)). 0 or -ENOMEM. */
int acl_set_copy(struct acl_set *dst, const struct acl_set *src);

/* A request to decide (AC3). */
struct acl_request {
    const char *principal;
    const char *host;
    uint8_t resource_type;
    const char *name;
    size_t name_len;
    uint8_t operation;
};

/* AC1-AC4 without super users (the caller checks those). Cost: O(bindings). */
bool acl_authorize(const struct acl_set *s, const struct acl_request *rq, bool allow_if_no_acl);
/* Kafka 3's authorizeByResourceType: may the principal `op` some resource of `type` (any ALLOW
 * for it, of that operation or ALL, whose resource no DENY "*" or empty-prefix of the same
 * operation covers)? With no binding of `type` at all: allow_if_no_acl. For IDEMPOTENT_WRITE
 * implied by WRITE on a topic (KIP-679). */
bool acl_authorize_any(const struct acl_set *s, const char *principal, const char *host,
                       uint8_t type, uint8_t op, bool allow_if_no_acl);

#endif /* RT_KAFKA_ACL_H */
