/*
 * broker_sessions.c — the controller's broker sessions (broker_sessions.h): a flat array
 * searched linearly (a cluster has few brokers; MI_BROKERS_MAX at most).
 */
#include "tools/kafka/cluster/broker_sessions.h"

#include <stdlib.h>
#include <string.h>

void broker_sessions_init(struct broker_sessions *bs)
{
    memset(bs, 0, sizeof(*bs));
}

void broker_sessions_free(struct broker_sessions *bs)
{
    free(bs->s);
    broker_sessions_init(bs);
}

struct broker_session *broker_sessions_get(struct broker_sessions *bs, int32_t id, uint64_t term,
                                           int64_t now_ms)
{
    if (bs->term != term) { /* BH1 */
        bs->term = term;
        bs->count = 0;
    }
    for (unsigned i = 0; i < bs->count; i++)
        if (bs->s[i].id == id)
            return &bs->s[i];
    if (bs->count == MI_BROKERS_MAX)
        return NULL;
    if (!bs->s && !(bs->s = calloc(MI_BROKERS_MAX, sizeof(*bs->s))))
        return NULL;
    struct broker_session *s = &bs->s[bs->count++];
    memset(s, 0, sizeof(*s));
    s->id = id;
    s->last_seen_ms = now_ms;
    return s;
}

bool broker_sessions_register(struct broker_sessions *bs, int32_t id, const uint8_t incarnation[16],
                              bool live, uint64_t term, int64_t now_ms, unsigned session_ms)
{
    struct broker_session *s = broker_sessions_get(bs, id, term, now_ms);
    if (!s)
        return false;
    if (live && s->has_incarnation && memcmp(s->incarnation, incarnation, 16) != 0 &&
        now_ms - s->last_seen_ms < (int64_t)session_ms)
        return false; /* BH3 */
    memcpy(s->incarnation, incarnation, 16);
    s->has_incarnation = true;
    s->last_seen_ms = now_ms;
    return true;
}

bool broker_sessions_heartbeat(struct broker_sessions *bs, int32_t id, bool fenced, uint64_t term,
                               int64_t now_ms, unsigned retry_ms)
{
    struct broker_session *s = broker_sessions_get(bs, id, term, now_ms);
    if (!s)
        return false;
    s->last_seen_ms = now_ms;
    if (!fenced || now_ms < s->pending_until_ms)
        return false;
    s->pending_until_ms = now_ms + retry_ms;
    return true;
}

unsigned broker_sessions_expired(struct broker_sessions *bs, const struct metadata_image *img,
                                 int32_t self, uint64_t term, int64_t now_ms, unsigned session_ms,
                                 unsigned retry_ms, int32_t *out, unsigned max)
{
    unsigned n = 0;
    for (unsigned i = 0; i < img->brokers_count && n < max; i++) {
        const struct mi_broker *b = &img->brokers[i];
        if (b->id == self || b->fenced)
            continue;
        struct broker_session *s = broker_sessions_get(bs, b->id, term, now_ms);
        if (s && now_ms - s->last_seen_ms > (int64_t)session_ms &&
            now_ms >= s->pending_until_ms) { /* BH2 */
            s->pending_until_ms = now_ms + retry_ms;
            out[n++] = b->id;
        }
    }
    return n;
}
