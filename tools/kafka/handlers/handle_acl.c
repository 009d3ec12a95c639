/*
 * handle_acl.c — DescribeAcls (29), CreateAcls (30) and DeleteAcls (31) over the server's
 * authorizer (auth/authorizer.h). DescribeAcls needs DESCRIBE on the cluster, the other two
 * ALTER on it (Kafka's rule); with `--authorizer` off all three answer SECURITY_DISABLED (54)
 * (KZ1). CreateAcls and DeleteAcls are saved to the data directory before they answer (AZ1),
 * so their rows run off the loop (api_table.c KA7). It owns the translation between the wire's
 * filters and bindings and the authorizer's; it never decides access itself.
 *
 *   KACL1 A binding is answered as one resource with one ACL (Kafka groups bindings of one
 *         resource; a client reads the same bindings either way).
 *   KACL2 A CreateAcls creation or a DeleteAcls filter Kafka would refuse (UNKNOWN values,
 *         ANY/MATCH in a creation, an invalid binding: acl.h AC5) is answered INVALID_REQUEST
 *         with the reason, and the others of the request are still applied.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/auth/authorizer.h"
#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle.h"

/* A NUL-terminated malloc'd copy (NULL for a null string; "" for out of memory is not
 * possible: the caller checks). */
static char *cstr(struct kp_str k, bool *oom)
{
    if (k.len < 0 || !k.ptr)
        return NULL;
    char *c = strndup(k.ptr, (size_t)k.len);
    if (!c)
        *oom = true;
    return c;
}

/* KACL2 for a filter. */
static const char *filter_invalid(const struct kmsg_acl_filter *f)
{
    if (f->resource_type_filter < ACL_RESOURCE_ANY ||
        f->resource_type_filter > ACL_RESOURCE_DELEGATION_TOKEN)
        return "unknown resource type filter";
    if (f->pattern_type_filter < ACL_PATTERN_ANY || f->pattern_type_filter > ACL_PATTERN_PREFIXED)
        return "unknown pattern type filter";
    if (f->operation < ACL_OP_ANY || f->operation > ACL_OP_IDEMPOTENT_WRITE)
        return "unknown operation";
    if (f->permission_type < ACL_PERM_ANY || f->permission_type > ACL_PERM_ALLOW)
        return "unknown permission type";
    return NULL;
}

struct filter_c {
    struct acl_filter f;
    char *name, *principal, *host;
};

static int filter_from_wire(const struct kmsg_acl_filter *w, struct filter_c *out)
{
    bool oom = false;
    out->name = cstr(w->resource_name_filter, &oom);
    out->principal = cstr(w->principal_filter, &oom);
    out->host = cstr(w->host_filter, &oom);
    out->f = (struct acl_filter){(uint8_t)w->resource_type_filter,
                                 (uint8_t)w->pattern_type_filter,
                                 (uint8_t)w->operation,
                                 (uint8_t)w->permission_type,
                                 out->name,
                                 out->principal,
                                 out->host};
    return oom ? -ENOMEM : 0;
}

static void filter_c_free(struct filter_c *f)
{
    free(f->name);
    free(f->principal);
    free(f->host);
}

static size_t set_bytes(const struct acl_set *set)
{
    size_t n = 0;
    for (uint32_t i = 0; i < set->count; i++)
        n += strlen(set->v[i].name) + strlen(set->v[i].principal) + strlen(set->v[i].host) + 3 + 64;
    return n;
}

static enum net_verdict oom(const char *api)
{
    kafka_log("%s: out of memory; closing", api);
    return NET_CLOSE;
}

/* ---- DescribeAcls ---- */

enum net_verdict kafka_handle_describe_acls(struct kafka_slot *s)
{
    const struct kmsg_acl_filter *w = &s->msg.describe_acls.f;
    struct kmsg_describe_acls_response m = {.error_code = KAFKA_NONE};
    struct acl_set found;
    acl_set_init(&found);
    const char *why = NULL;
    if (!kafka_authorizer_on(s)) {
        m.error_code = KAFKA_SECURITY_DISABLED;
        why = "No Authorizer is configured (--authorizer on)";
    } else if (!kafka_authorize_cluster(s, ACL_OP_DESCRIBE)) {
        m.error_code = KAFKA_CLUSTER_AUTHORIZATION_FAILED;
    } else if ((why = filter_invalid(w)) != NULL) {
        m.error_code = KAFKA_INVALID_REQUEST;
    } else {
        struct filter_c f;
        int rc = filter_from_wire(w, &f);
        if (!rc)
            rc = authorizer_select(s->server->authorizer, &f.f, false, &found);
        filter_c_free(&f);
        if (rc)
            return oom("DescribeAcls");
    }
    if (kafka_resp_reserve(s, set_bytes(&found) +
                                  found.count * (sizeof(struct kmsg_acl_resource) +
                                                 sizeof(struct kmsg_acl_description)) +
                                  256) != 0) {
        acl_set_free(&found);
        return oom("DescribeAcls");
    }
    if (why)
        m.error_message = kafka_str_dup(s, why);
    struct kmsg_acl_resource *res = kafka_alloc(s, found.count, sizeof(*res));
    for (uint32_t i = 0; res && i < found.count; i++) { /* KACL1 */
        const struct acl_binding *b = &found.v[i];
        struct kmsg_acl_description *d = kafka_alloc(s, 1, sizeof(*d));
        if (!d)
            break;
        *d =
            (struct kmsg_acl_description){kafka_str_dup(s, b->principal), kafka_str_dup(s, b->host),
                                          (int8_t)b->operation, (int8_t)b->permission};
        res[i] = (struct kmsg_acl_resource){(int8_t)b->resource_type, kafka_str_dup(s, b->name),
                                            (int8_t)b->pattern_type, d, 1};
        m.resources_count++;
    }
    m.resources = res;
    acl_set_free(&found);
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_describe_acls_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* ---- CreateAcls ---- */

enum net_verdict kafka_handle_create_acls(struct kafka_slot *s)
{
    const struct kmsg_create_acls_request *q = &s->msg.create_acls;
    uint32_t n = q->creations_count > 0 ? (uint32_t)q->creations_count : 0;
    if (kafka_resp_reserve(s, (size_t)n * (sizeof(struct kmsg_acl_creation_result) + 128)) != 0)
        return oom("CreateAcls");
    struct kmsg_acl_creation_result *out = kafka_alloc(s, n, sizeof(*out));
    struct acl_binding *b = calloc(n ? n : 1, sizeof(*b));
    int *results = calloc(n ? n : 1, sizeof(*results));
    const char **whys = calloc(n ? n : 1, sizeof(*whys));
    bool no_mem = !b || !results || !whys || (n && !out);
    int16_t all = KAFKA_NONE;
    const char *all_why = NULL;
    if (!kafka_authorizer_on(s)) {
        all = KAFKA_SECURITY_DISABLED;
        all_why = "No Authorizer is configured (--authorizer on)";
    } else if (!kafka_authorize_cluster(s, ACL_OP_ALTER)) {
        all = KAFKA_CLUSTER_AUTHORIZATION_FAILED;
    }
    uint32_t valid = 0;
    for (uint32_t i = 0; !no_mem && all == KAFKA_NONE && i < n; i++) {
        const struct kmsg_acl_creation *c = &q->creations[i];
        struct acl_binding x = {(uint8_t)c->resource_type,       (uint8_t)c->resource_pattern_type,
                                (uint8_t)c->operation,           (uint8_t)c->permission_type,
                                cstr(c->resource_name, &no_mem), cstr(c->principal, &no_mem),
                                cstr(c->host, &no_mem)};
        if (no_mem || !x.name || !x.principal || !x.host ||
            (whys[i] = acl_binding_invalid(&x)) != NULL) { /* KACL2 */
            if (!whys[i])
                whys[i] = "null resource name, principal or host";
            results[i] = RT_E_INVALID_ARGUMENT;
            free(x.name);
            free(x.principal);
            free(x.host);
            continue;
        }
        results[i] = 1; /* to create */
        b[valid++] = x;
    }
    if (!no_mem && valid) {
        int *rs = calloc(valid, sizeof(*rs));
        const char **ws = calloc(valid, sizeof(*ws));
        if (!rs || !ws) {
            no_mem = true;
        } else {
            authorizer_create(s->server->authorizer, b, valid, rs, ws);
            for (uint32_t i = 0, k = 0; i < n; i++)
                if (results[i] == 1) {
                    results[i] = rs[k];
                    whys[i] = ws[k];
                    k++;
                }
        }
        free(rs);
        free(ws);
    }
    for (uint32_t i = 0; i < valid; i++) {
        free(b[i].name);
        free(b[i].principal);
        free(b[i].host);
    }
    free(b);
    if (no_mem) {
        free(results);
        free(whys);
        return oom("CreateAcls");
    }
    for (uint32_t i = 0; i < n; i++) {
        int16_t code = all != KAFKA_NONE                     ? all
                       : results[i] == 0                     ? KAFKA_NONE
                       : results[i] == RT_E_INVALID_ARGUMENT ? KAFKA_INVALID_REQUEST
                                                             : KAFKA_UNKNOWN_SERVER_ERROR;
        const char *why = all != KAFKA_NONE ? all_why : results[i] ? whys[i] : NULL;
        out[i].error_code = code;
        if (why)
            out[i].error_message = kafka_str_dup(s, why);
        kafka_count_error(s, code);
    }
    free(results);
    free(whys);
    struct kmsg_create_acls_response m = {.results = out, .results_count = (int32_t)n};
    kafka_response_begin(s);
    kmsg_create_acls_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* ---- DeleteAcls ---- */

enum net_verdict kafka_handle_delete_acls(struct kafka_slot *s)
{
    const struct kmsg_delete_acls_request *q = &s->msg.delete_acls;
    uint32_t n = q->filters_count > 0 ? (uint32_t)q->filters_count : 0;
    int16_t all = KAFKA_NONE;
    const char *all_why = NULL;
    if (!kafka_authorizer_on(s)) {
        all = KAFKA_SECURITY_DISABLED;
        all_why = "No Authorizer is configured (--authorizer on)";
    } else if (!kafka_authorize_cluster(s, ACL_OP_ALTER)) {
        all = KAFKA_CLUSTER_AUTHORIZATION_FAILED;
    }
    struct acl_set *removed = calloc(n ? n : 1, sizeof(*removed));
    const char **whys = calloc(n ? n : 1, sizeof(*whys));
    int16_t *codes = calloc(n ? n : 1, sizeof(*codes));
    bool no_mem = !removed || !whys || !codes;
    size_t bytes = 256;
    for (uint32_t i = 0; !no_mem && i < n; i++) {
        acl_set_init(&removed[i]);
        if (all != KAFKA_NONE) {
            codes[i] = all;
            whys[i] = all_why;
            continue;
        }
        if ((whys[i] = filter_invalid(&q->filters[i])) != NULL) { /* KACL2 */
            codes[i] = KAFKA_INVALID_REQUEST;
            continue;
        }
        struct filter_c f;
        int rc = filter_from_wire(&q->filters[i], &f);
        if (!rc)
            rc = authorizer_select(s->server->authorizer, &f.f, true, &removed[i]);
        filter_c_free(&f);
        if (rc == -ENOMEM) {
            no_mem = true;
        } else if (rc) {
            codes[i] = KAFKA_UNKNOWN_SERVER_ERROR;
            whys[i] = "the ACLs could not be saved";
        }
        bytes += set_bytes(&removed[i]) +
                 removed[i].count * sizeof(struct kmsg_delete_acls_matching_acl);
    }
    bytes += n * (sizeof(struct kmsg_delete_acls_filter_result) + 128);
    struct kmsg_delete_acls_filter_result *out = NULL;
    if (!no_mem && kafka_resp_reserve(s, bytes) == 0)
        out = kafka_alloc(s, n, sizeof(*out));
    no_mem = no_mem || (n && !out);
    for (uint32_t i = 0; !no_mem && i < n; i++) {
        out[i].error_code = codes[i];
        if (whys[i])
            out[i].error_message = kafka_str_dup(s, whys[i]);
        kafka_count_error(s, codes[i]);
        struct kmsg_delete_acls_matching_acl *ma = kafka_alloc(s, removed[i].count, sizeof(*ma));
        for (uint32_t k = 0; ma && k < removed[i].count; k++) {
            const struct acl_binding *b = &removed[i].v[k];
            ma[k] =
                (struct kmsg_delete_acls_matching_acl){.resource_type = (int8_t)b->resource_type,
                                                       .resource_name = kafka_str_dup(s, b->name),
                                                       .pattern_type = (int8_t)b->pattern_type,
                                                       .principal = kafka_str_dup(s, b->principal),
                                                       .host = kafka_str_dup(s, b->host),
                                                       .operation = (int8_t)b->operation,
                                                       .permission_type = (int8_t)b->permission};
        }
        out[i].matching_acls = ma;
        out[i].matching_acls_count = ma ? (int32_t)removed[i].count : 0;
    }
    for (uint32_t i = 0; removed && i < n; i++)
        acl_set_free(&removed[i]);
    free(removed);
    free(whys);
    free(codes);
    if (no_mem)
        return oom("DeleteAcls");
    struct kmsg_delete_acls_response m = {.filter_results = out,
                                          .filter_results_count = (int32_t)n};
    kafka_response_begin(s);
    kmsg_delete_acls_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}
