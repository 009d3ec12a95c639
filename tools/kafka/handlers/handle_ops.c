/*
 * handle_ops.c — KIP-664's operator APIs over the engine: DescribeProducers (61) v0 over the
 * partitions' producer state (rt_partition_producers), DescribeTransactions (65) v0 and
 * ListTransactions (66) v0-1 over the transaction coordinator (rt_txn_list), what
 * `kafka-transactions.sh describe-producers`, `describe` and `list` send. Requests are decoded by kmsg_ops.c (into
 * s->msg by server.c), answers encoded by it; this file only decides them. It owns nothing
 * beyond one request: every string and array of an answer lives in the slot's response arena.
 * It never writes: neither API changes a transaction.
 *
 * Invariants:
 *   KOP1 DescribeTransactions answers every id it was asked, in the order asked: an id the
 *        coordinator does not hold (never initialised, expired to Dead, or no coordinator yet)
 *        is TRANSACTIONAL_ID_NOT_FOUND (105) with the other fields at their defaults (producer
 *        -1, epoch -1, timeout 0, start -1, no partitions); a held one carries its state's
 *        Kafka name, timeout, producer, epoch, the wall-clock start of its open transaction
 *        (-1 when none is open) and its partitions grouped by topic, in the coordinator's order.
 *   KOP2 ListTransactions lists every id the coordinator holds (Dead ones are gone) that passes
 *        every filter given: its state's name among state_filters (an unknown name matches
 *        nothing and is answered back in unknown_state_filters, as Kafka does), its producer id
 *        among producer_id_filters, and (v1) an open transaction older than
 *        duration_filter_ms when that is >= 0. No filter given: everything.
 *   KOP3 The answer is built in two passes over rt_txn_list (or rt_partition_producers): count,
 *        then fill into one arena reservation; what appears between them is left out, never
 *        written past the reservation.
 *   KOP4 DescribeProducers answers every partition asked, in the order asked: one that does not
 *        exist (or a topic name that cannot be one) is UNKNOWN_TOPIC_OR_PARTITION (3) with no
 *        producers; an existing one lists every producer its state holds (producer id, epoch,
 *        last sequence, last timestamp, coordinator epoch -1 (none is kept), and the open
 *        transaction's first offset, -1 when none is open); error_message is always null.
 *   KOP5 On a cluster node (--voters) DescribeTransactions and ListTransactions answer for the
 *        transaction coordinator's state only where this node is the coordinator
 *        (txn_cluster.h KTC2: the ready leader of `__transaction_state`-0), as Kafka's
 *        TransactionCoordinator answers only for the partitions it has loaded: elsewhere
 *        DescribeTransactions answers every id it may describe NOT_COORDINATOR (16) (also before
 *        the topic exists: Kafka's coordinator then owns no partition) and
 *        COORDINATOR_LOAD_IN_PROGRESS (14) while this node, named leader, still loads it;
 *        ListTransactions answers NONE with no transactions (the unknown state filters still
 *        answered back) on a node that does not coordinate, and COORDINATOR_LOAD_IN_PROGRESS
 *        with nothing else while it loads (Kafka's listTransactionStates). The engine's local
 *        coordinator, resigned there, is never read. Kafka's admin client asks every broker
 *        and merges the lists; `ringtail txn list --bootstrap` does the same.
 *   KOP6 On a cluster node DescribeProducers answers a partition only where this node holds a
 *        replica of it (the image names it leader or follower: Kafka's
 *        Partition.activeProducerState answers from any replica's log; a follower's producer
 *        state is rebuilt from the batches it copies); a partition the image does not have is
 *        UNKNOWN_TOPIC_OR_PARTITION (3) (Kafka's metadata cache check), one the image gives to
 *        other nodes only NOT_LEADER_OR_FOLLOWER (6) (Kafka's ReplicaManager for a partition
 *        it does not host; whatever the local engine holds of it is never answered).
 *
 * Costs: DescribeProducers makes two shard calls per partition asked (each waits behind that
 * shard's current round, on the loop thread); rt_txn_list visits every id twice (O(ids), each under its id's lock, which a durable
 * round of that id holds: an operator call can wait one round on the loop thread; these APIs
 * are rare and never on a producer's path). DescribeTransactions is O(ids x asked).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tools/kafka/cluster/metadata_node.h"
#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle.h"
#include "tools/kafka/handlers/handle_txn.h"
#include "tools/kafka/handlers/txn_cluster.h"

#define OPS_TRANSACTIONAL_ID_NOT_FOUND 105 /* Kafka's TRANSACTIONAL_ID_NOT_FOUND */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- pass one: what the answer needs ---- */

struct ops_count {
    size_t ids;
    size_t bytes; /* strings and partition arrays */
};

static int count_one(void *ctx, const struct rt_txn_info *t)
{
    struct ops_count *c = ctx;
    c->ids++;
    c->bytes += strlen(t->transactional_id) + strlen(t->state) + 32;
    for (uint32_t i = 0; i < t->partition_count; i++)
        c->bytes += strlen(t->partition_topics[i]) + 1 + sizeof(int32_t) +
                    sizeof(struct kmsg_transaction_partitions) + sizeof(bool) + 24;
    return 0;
}

/* KOP5: KAFKA_NONE when this node answers for the coordinator's state (a single broker always
 * does), else the code a cluster node answers instead. */
static int16_t ops_coordinator(const struct kafka_slot *s)
{
    int16_t c = kafka_txn_coordinator_check(s->server);
    return c == KAFKA_NONE || c == KAFKA_COORDINATOR_LOAD_IN_PROGRESS ? c : KAFKA_NOT_COORDINATOR;
}

static int ops_reserve(struct kafka_slot *s, size_t extra, bool coordinating, struct ops_count *c)
{
    memset(c, 0, sizeof(*c));
    int rc = coordinating ? rt_txn_list(s->server->engine, count_one, c) : 0; /* KOP5 */
    if (rc)
        return rc;
    size_t need = extra + c->bytes +
                  c->ids * (sizeof(struct kmsg_transaction_state) +
                            sizeof(struct kmsg_listed_transaction) + 32);
    return kafka_resp_reserve(s, need + 256);
}

static bool str_is(struct kp_str a, const char *b)
{
    size_t n = strlen(b);
    return a.len >= 0 && (size_t)a.len == n && memcmp(a.ptr, b, n) == 0;
}

/* ---- DescribeTransactions ---- */

struct describe_fill {
    struct kafka_slot *s;
    const struct kmsg_describe_transactions_request *q;
    struct kmsg_transaction_state *out; /* one per asked id, in the order asked */
    int64_t now_wall_ms;
};

/* The partitions of t grouped by topic (KOP1), into the arena. */
static void partitions_fill(struct kafka_slot *s, const struct rt_txn_info *t,
                            struct kmsg_transaction_state *st)
{
    if (t->partition_count == 0)
        return;
    struct kmsg_transaction_partitions *tp = kafka_alloc(s, t->partition_count, sizeof(*tp));
    int32_t *ids = kafka_alloc(s, t->partition_count, sizeof(*ids));
    if (!tp || !ids)
        return; /* KOP3: left out rather than written past the reservation */
    int32_t topics = 0;
    uint32_t used = 0;
    bool *taken = kafka_alloc(s, t->partition_count, sizeof(*taken));
    if (!taken)
        return;
    for (uint32_t i = 0; i < t->partition_count; i++) {
        if (taken[i])
            continue;
        struct kmsg_transaction_partitions *g = &tp[topics++];
        g->name = kafka_str_dup(s, t->partition_topics[i]);
        int32_t *at = ids + used;
        int32_t n = 0;
        for (uint32_t k = i; k < t->partition_count; k++) {
            if (!taken[k] && strcmp(t->partition_topics[k], t->partition_topics[i]) == 0) {
                taken[k] = true;
                at[n++] = (int32_t)t->partition_ids[k];
            }
        }
        used += (uint32_t)n;
        g->partition_indexes = at;
        g->partition_indexes_count = n;
    }
    st->topic_partitions = tp;
    st->topic_partitions_count = topics;
}

static void state_fill(struct kafka_slot *s, const struct rt_txn_info *t, int64_t now_wall_ms,
                       struct kmsg_transaction_state *st)
{
    st->error_code = KAFKA_NONE;
    st->transaction_state = kafka_str_dup(s, t->state);
    st->transaction_timeout_ms = t->timeout_ms;
    st->transaction_start_time_ms =
        t->age_ms > 0 || strcmp(t->state, "Ongoing") == 0 ? now_wall_ms - t->age_ms : -1;
    st->producer_id = t->producer_id;
    st->producer_epoch = t->epoch;
    partitions_fill(s, t, st);
}

static int describe_one(void *ctx, const struct rt_txn_info *t)
{
    struct describe_fill *d = ctx;
    for (int32_t i = 0; i < d->q->transactional_ids_count; i++) {
        struct kmsg_transaction_state *st = &d->out[i];
        if (st->error_code == KAFKA_NONE ||
            !str_is(d->q->transactional_ids[i], t->transactional_id))
            continue;
        state_fill(d->s, t, d->now_wall_ms, st);
    }
    return 0;
}

enum net_verdict kafka_handle_describe_transactions(struct kafka_slot *s)
{
    const struct kmsg_describe_transactions_request *q = &s->msg.describe_transactions;
    int32_t n = q->transactional_ids_count > 0 ? q->transactional_ids_count : 0;
    int16_t coord = ops_coordinator(s); /* KOP5 */
    struct ops_count c;
    int rc = ops_reserve(s, (size_t)n * (sizeof(struct kmsg_transaction_state) + 8),
                         coord == KAFKA_NONE, &c);
    if (rc == -ENOMEM) {
        fprintf(stderr, "ringtail serve: DescribeTransactions: out of memory; closing\n");
        return NET_CLOSE;
    }
    struct kmsg_transaction_state *out = n ? kafka_alloc(s, (size_t)n, sizeof(*out)) : NULL;
    if (n && !out)
        return NET_CLOSE;
    for (int32_t i = 0; i < n; i++)
        out[i] = (struct kmsg_transaction_state){
            .error_code = coord == KAFKA_NONE ? OPS_TRANSACTIONAL_ID_NOT_FOUND : coord, /* KOP5 */
            .transactional_id = q->transactional_ids[i],
            .transaction_state = kp_str_of(""),
            .transaction_start_time_ms = -1,
            .producer_id = -1,
            .producer_epoch = -1};
    struct describe_fill d = {.s = s, .q = q, .out = out, .now_wall_ms = wall_ms()};
    if (rc == 0 && coord == KAFKA_NONE)
        rc = rt_txn_list(s->server->engine, describe_one, &d);
    for (int32_t i = 0; i < n; i++) /* KZ2: DESCRIBE on each transactional id */
        if (!kafka_authorize_str(s, ACL_RESOURCE_TRANSACTIONAL_ID, q->transactional_ids[i],
                                 ACL_OP_DESCRIBE))
            out[i] = (struct kmsg_transaction_state){
                .error_code = KAFKA_TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                .transactional_id = q->transactional_ids[i],
                .transaction_state = kp_str_of(""),
                .transaction_start_time_ms = -1,
                .producer_id = -1,
                .producer_epoch = -1};
    if (rc) {
        fprintf(stderr, "ringtail serve: DescribeTransactions: %s: %s\n", rt_strerror(rc),
                rt_error_detail());
        for (int32_t i = 0; i < n; i++)
            if (out[i].error_code != KAFKA_NONE)
                out[i].error_code = kafka_error_from_rt(rc);
    }
    struct kmsg_describe_transactions_response m = {.transaction_states = out,
                                                    .transaction_states_count = n};
    for (int32_t i = 0; i < n; i++)
        kafka_count_error(s, out[i].error_code);
    kafka_response_begin(s);
    kmsg_describe_transactions_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* ---- ListTransactions ---- */

struct list_fill {
    struct kafka_slot *s;
    const struct kmsg_list_transactions_request *q;
    struct kmsg_listed_transaction *out;
    size_t count, capacity;
};

/* KOP2 */
static bool list_passes(const struct kmsg_list_transactions_request *q, const struct rt_txn_info *t)
{
    if (q->state_filters_count > 0) {
        bool any = false;
        for (int32_t i = 0; i < q->state_filters_count && !any; i++)
            any = str_is(q->state_filters[i], t->state);
        if (!any)
            return false;
    }
    if (q->producer_id_filters_count > 0) {
        bool any = false;
        for (int32_t i = 0; i < q->producer_id_filters_count && !any; i++)
            any = q->producer_id_filters[i] == t->producer_id;
        if (!any)
            return false;
    }
    if (q->duration_filter_ms >= 0 &&
        (strcmp(t->state, "Ongoing") != 0 || t->age_ms <= q->duration_filter_ms))
        return false;
    return true;
}

static int list_one(void *ctx, const struct rt_txn_info *t)
{
    struct list_fill *l = ctx;
    if (!list_passes(l->q, t) || l->count >= l->capacity) /* KOP3 */
        return 0;
    if (!kafka_authorize(l->s, ACL_RESOURCE_TRANSACTIONAL_ID, t->transactional_id,
                         strlen(t->transactional_id), ACL_OP_DESCRIBE))
        return 0; /* KZ2: only the ids the principal may describe */
    l->out[l->count++] = (struct kmsg_listed_transaction){
        .transactional_id = kafka_str_dup(l->s, t->transactional_id),
        .producer_id = t->producer_id,
        .transaction_state = kafka_str_dup(l->s, t->state)};
    return 0;
}

/* Kafka's transaction state names (TransactionState.scala); a filter naming none is unknown. */
static bool state_known(struct kp_str name)
{
    static const char *const states[] = {"Empty",        "Ongoing",          "PrepareCommit",
                                         "PrepareAbort", "CompleteCommit",   "CompleteAbort",
                                         "Dead",         "PrepareEpochFence"};
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
        if (str_is(name, states[i]))
            return true;
    return false;
}

enum net_verdict kafka_handle_list_transactions(struct kafka_slot *s)
{
    const struct kmsg_list_transactions_request *q = &s->msg.list_transactions;
    int32_t nf = q->state_filters_count > 0 ? q->state_filters_count : 0;
    int16_t coord = ops_coordinator(s); /* KOP5 */
    struct ops_count c;
    int rc = ops_reserve(s, (size_t)nf * sizeof(struct kp_str) + 8, coord == KAFKA_NONE, &c);
    if (rc == -ENOMEM) {
        fprintf(stderr, "ringtail serve: ListTransactions: out of memory; closing\n");
        return NET_CLOSE;
    }
    struct list_fill l = {.s = s, .q = q};
    if (rc == 0 && c.ids) {
        l.out = kafka_alloc(s, c.ids, sizeof(*l.out));
        l.capacity = l.out ? c.ids : 0;
    }
    if (rc == 0 && coord == KAFKA_NONE)
        rc = rt_txn_list(s->server->engine, list_one, &l);
    struct kmsg_list_transactions_response m = {.error_code = KAFKA_NONE};
    /* KOP5: while loading, Kafka answers the error alone (no unknown filters either) */
    struct kp_str *unknown = nf && coord != KAFKA_COORDINATOR_LOAD_IN_PROGRESS
                                 ? kafka_alloc(s, (size_t)nf, sizeof(*unknown))
                                 : NULL;
    for (int32_t i = 0; unknown && i < nf; i++) /* KOP2 */
        if (!state_known(q->state_filters[i]))
            unknown[m.unknown_state_filters_count++] = q->state_filters[i];
    m.unknown_state_filters = unknown;
    if (rc) {
        fprintf(stderr, "ringtail serve: ListTransactions: %s: %s\n", rt_strerror(rc),
                rt_error_detail());
        m.error_code = kafka_error_from_rt(rc);
    } else if (coord == KAFKA_COORDINATOR_LOAD_IN_PROGRESS) {
        m.error_code = coord;
    } else {
        m.transaction_states = l.out;
        m.transaction_states_count = (int32_t)l.count;
    }
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_list_transactions_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* ---- DescribeProducers ---- */

/* KOP6: where the image puts one partition, as seen from this node. */
struct replica_look {
    const char *topic;
    int32_t partition, self;
    int16_t code;
};

static void replica_of(void *ctx, const struct metadata_image *img)
{
    struct replica_look *lk = ctx;
    const struct mi_topic *t = metadata_image_topic(img, lk->topic);
    if (!t || lk->partition < 0 || lk->partition >= t->partitions_count ||
        !t->partitions[lk->partition].exists) {
        lk->code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
        return;
    }
    const struct mi_partition *mp = &t->partitions[lk->partition];
    lk->code = KAFKA_NOT_LEADER_OR_FOLLOWER;
    for (unsigned i = 0; i < mp->replicas_count; i++)
        if (mp->replicas[i] == lk->self)
            lk->code = KAFKA_NONE;
}

/* KOP6: KAFKA_NONE when this node answers the partition from its engine (a single broker
 * always does), else the partition's code. */
static int16_t producers_placement(const struct kafka_slot *s, const char *topic, int32_t p)
{
    struct metadata_node *mn = kafka_cluster(s->server);
    if (!mn)
        return KAFKA_NONE;
    struct replica_look lk = {
        .topic = topic, .partition = p, .self = s->server->opts.broker_id, .code = KAFKA_NONE};
    metadata_node_read(mn, replica_of, &lk);
    return lk.code;
}

struct producers_fill {
    struct kafka_slot *s;
    struct kmsg_producer_state *out;
    int32_t count, capacity;
};

static int producers_count(void *ctx, const struct rt_partition_producer *pr)
{
    (void)pr;
    (*(size_t *)ctx)++;
    return 0;
}

static int producers_one(void *ctx, const struct rt_partition_producer *pr)
{
    struct producers_fill *f = ctx;
    if (f->count >= f->capacity) /* KOP3 */
        return 0;
    /* KOP4: no coordinator epoch is kept per producer (Kafka answers -1 for none). */
    f->out[f->count++] =
        (struct kmsg_producer_state){.producer_id = pr->producer_id,
                                     .producer_epoch = pr->producer_epoch,
                                     .last_sequence = pr->last_sequence,
                                     .last_timestamp = pr->last_timestamp_ms,
                                     .coordinator_epoch = -1,
                                     .current_txn_start_offset = pr->current_txn_first_offset};
    return 0;
}

enum net_verdict kafka_handle_describe_producers(struct kafka_slot *s)
{
    const struct kmsg_describe_producers_request *q = &s->msg.describe_producers;
    rt_engine *e = s->server->engine;
    int32_t nt = q->topics_count > 0 ? q->topics_count : 0;
    /* Pass one: the producers of every partition asked. */
    size_t producers = 0, parts = 0;
    char name[RT_TOPIC_NAME_MAX + 1];
    for (int32_t t = 0; t < nt; t++) {
        bool ok = kafka_topic_name(q->topics[t].name, name);
        for (int32_t i = 0; i < q->topics[t].partitions_count; i++) {
            parts++;
            int32_t p = q->topics[t].partitions[i];
            if (ok && p >= 0 && producers_placement(s, name, p) == KAFKA_NONE) /* KOP6 */
                (void)rt_partition_producers(e, name, (uint32_t)p, producers_count, &producers);
        }
    }
    size_t need = (size_t)nt * (sizeof(struct kmsg_describe_producers_topic) + 8) +
                  parts * (sizeof(struct kmsg_describe_producers_partition) + 8) +
                  producers * sizeof(struct kmsg_producer_state) + parts * 8;
    if (kafka_resp_reserve(s, need + 256) != 0) {
        fprintf(stderr, "ringtail serve: DescribeProducers: out of memory; closing\n");
        return NET_CLOSE;
    }
    struct kmsg_describe_producers_topic *topics =
        nt ? kafka_alloc(s, (size_t)nt, sizeof(*topics)) : NULL;
    if (nt && !topics)
        return NET_CLOSE;
    size_t left = producers;
    for (int32_t t = 0; t < nt; t++) {
        int32_t np = q->topics[t].partitions_count;
        struct kmsg_describe_producers_partition *pp =
            np > 0 ? kafka_alloc(s, (size_t)np, sizeof(*pp)) : NULL;
        if (np > 0 && !pp)
            return NET_CLOSE;
        topics[t] = (struct kmsg_describe_producers_topic){
            .name = q->topics[t].name, .partitions = pp, .partitions_count = np};
        bool ok = kafka_topic_name(q->topics[t].name, name);
        bool read = kafka_authorize_str(s, ACL_RESOURCE_TOPIC, q->topics[t].name, ACL_OP_READ);
        for (int32_t i = 0; i < np; i++) {
            int32_t p = q->topics[t].partitions[i];
            struct producers_fill f = {.s = s};
            if (left) {
                f.out = kafka_alloc(s, left, sizeof(*f.out));
                f.capacity = f.out ? (int32_t)left : 0;
            }
            int16_t placed = read && ok && p >= 0 ? producers_placement(s, name, p) : KAFKA_NONE;
            int rc = !read                  ? RT_E_UNKNOWN_TOPIC_OR_PARTITION
                     : placed != KAFKA_NONE ? RT_E_UNKNOWN_TOPIC_OR_PARTITION /* KOP6 */
                     : ok && p >= 0
                         ? rt_partition_producers(e, name, (uint32_t)p, producers_one, &f)
                         : RT_E_UNKNOWN_TOPIC_OR_PARTITION;
            int16_t code = !read                  ? KAFKA_TOPIC_AUTHORIZATION_FAILED /* KZ2 */
                           : placed != KAFKA_NONE ? placed                           /* KOP6 */
                           : rc == 0              ? KAFKA_NONE
                           : rc == RT_E_UNKNOWN_TOPIC_OR_PARTITION
                               ? KAFKA_UNKNOWN_TOPIC_OR_PARTITION
                               : kafka_error_from_rt(rc);
            if (rc && rc != RT_E_UNKNOWN_TOPIC_OR_PARTITION)
                fprintf(stderr, "ringtail serve: DescribeProducers: %s: %s\n", rt_strerror(rc),
                        rt_error_detail());
            kafka_count_error(s, code);
            pp[i] = (struct kmsg_describe_producers_partition){
                .partition_index = p,
                .error_code = code,
                .active_producers = rc ? NULL : f.out,
                .active_producers_count = rc ? 0 : f.count};
            left -= rc ? 0 : (size_t)f.count;
        }
    }
    struct kmsg_describe_producers_response m = {.topics = topics, .topics_count = nt};
    kafka_response_begin(s);
    kmsg_describe_producers_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}
