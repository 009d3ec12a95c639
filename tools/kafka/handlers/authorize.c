/*
 * authorize.c — the handlers' access check (authorize.h: KZ1, KZ2) over the server's
 * authorizer and the connection's cache. It owns no state of its own and never writes an
 * answer.
 */
#include "tools/kafka/handlers/authorize.h"

#include <string.h>

#include "tools/kafka/auth/authorizer.h"
#include "tools/kafka/handlers/handle.h"

static const char *host_of(const struct kafka_slot *s)
{
    const struct net_session *ns = s->req ? s->req->session : NULL;
    return ns && ns->peer_host[0] ? ns->peer_host : "";
}

static const char *principal_of(const struct kafka_slot *s)
{
    const struct kafka_session *ks = kafka_session_of(s->req);
    return ks ? ks->principal : KAFKA_PRINCIPAL_ANONYMOUS;
}

bool kafka_authorizer_on(const struct kafka_slot *s)
{
    return s->server->authorizer != NULL;
}

bool kafka_authorize(struct kafka_slot *s, uint8_t type, const char *name, size_t name_len,
                     uint8_t op)
{
    struct authorizer *az = s->server->authorizer;
    if (!az)
        return true; /* KZ1 */
    if (!name) {
        name = ACL_CLUSTER_NAME;
        name_len = sizeof(ACL_CLUSTER_NAME) - 1;
    }
    struct kafka_session *ks = kafka_session_of(s->req);
    bool ok = authorizer_check(az, ks ? ks->acl_cache : NULL, principal_of(s), host_of(s), type,
                               name, name_len, op);
    if (!ok)
        atomic_fetch_add_explicit(&s->server->stats.authorization_denied, 1, memory_order_relaxed);
    return ok;
}

bool kafka_authorize_create_topic(struct kafka_slot *s, const char *topic)
{
    return kafka_authorize_cluster(s, ACL_OP_CREATE) ||
           kafka_authorize_topic(s, topic, ACL_OP_CREATE);
}

bool kafka_authorize_idempotent(struct kafka_slot *s)
{
    struct authorizer *az = s->server->authorizer;
    if (!az || kafka_authorize_cluster(s, ACL_OP_IDEMPOTENT_WRITE))
        return true;
    return authorizer_check_any(az, principal_of(s), host_of(s), ACL_RESOURCE_TOPIC, ACL_OP_WRITE);
}
