/*
 * cmd_txn_cluster.c — `ringtail txn list --bootstrap HOST:PORT[,...]` and `ringtail txn abort
 * --bootstrap ...`: the transactions of a running cluster (or broker), asked over the wire as
 * Kafka's admin client and `kafka-transactions.sh` ask (tools/kafka/cluster/kclient.h, the
 * kmsg_* descriptions), never from a data directory.
 *
 * `list`: Metadata (v8) from the first bootstrap address that answers names the nodes and every
 * partition's leader; every node is asked ListTransactions (66, v0) — each lists only what it
 * coordinates (handle_ops.c KOP5), so the lists are merged, as Kafka's admin client does — then
 * the coordinator of each id shown is asked DescribeTransactions (65) for its epoch, timeout,
 * start time and partitions, and every partition's leader DescribeProducers (61) for the open
 * transactions its log holds (each producer's first offset of its open transaction: the LSO
 * it pins there). A partition whose log holds an open transaction that no coordinator holds
 * open with that partition is printed as pinned with no live transaction (Kafka's
 * `find-hanging`), with what `abort --topic --partition --producer-id` needs and its LSO and
 * high watermark (ListOffsets at its leader, read_committed and read_uncommitted).
 *
 * `abort --transactional-id ID`: FindCoordinator (key type 1) names the coordinator; it is
 * asked DescribeTransactions (the id must have a transaction open), then InitProducerId for the
 * id, which is how Kafka's coordinator aborts a transaction for a new instance: the producer is
 * fenced (epoch bump) and ABORT markers go to every partition of the transaction, wherever it is
 * led (the coordinator's marker writer). `abort --topic T --partition P --producer-id ID`
 * (Kafka's `kafka-transactions.sh abort`): DescribeProducers at the partition's leader gives the
 * producer's epoch and coordinator epoch, then WriteTxnMarkers (27, v1) ABORT goes to that
 * leader alone (it needs CLUSTER_ACTION when the cluster runs an authorizer). It refuses when a
 * coordinator still holds that producer's transaction open with the partition (TXC2) unless
 * --force.
 *
 * It owns its connections (one call each, bounded by the timeout) and the decoded answers
 * (freed at the end); it never reads or writes a data directory and never decides a
 * transaction itself: every change is a request a broker checks.
 *
 * Invariants:
 *   TXC1  Every node Metadata lists is asked; a node that does not answer, or answers an error,
 *         is named on stderr and the command exits 1 after printing what the others said (an
 *         incomplete view is never presented as the whole cluster).
 *   TXC2  `abort --topic/--partition/--producer-id` writes a marker only when no node answers
 *         that it coordinates an open transaction of that producer id holding that partition
 *         (and every node answered), or with --force: a marker written under a live transaction
 *         would end it in one partition while its coordinator goes on (Kafka's tool has that
 *         hazard; `abort --transactional-id` ends it everywhere instead).
 *   TXC3  An abort reports success only on the broker's NONE for exactly what was asked (the
 *         producer id, topic and partition of the marker; the coordinator's answer for the id),
 *         and prints the state read back afterwards.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tools/kafka/cluster/kclient.h"
#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/kmsg.h"

#define TXC_METADATA_VERSION           8
#define TXC_TRANSACTIONAL_ID_NOT_FOUND 105
#define TXC_RETRY_SLEEP_US             200000

typedef int (*txc_decode_fn)(struct kp_reader *r, int16_t v, struct kp_arena *a, void *out);

#define TXC_API(api)                                                                               \
    static int enc_##api(struct kp_writer *w, int16_t v, const void *m)                            \
    {                                                                                              \
        return kmsg_##api##_request_encode(w, v, m);                                               \
    }                                                                                              \
    static int dec_##api(struct kp_reader *r, int16_t v, struct kp_arena *a, void *out)            \
    {                                                                                              \
        return kmsg_##api##_response_decode(r, v, a, out);                                         \
    }
TXC_API(metadata)
TXC_API(list_transactions)
TXC_API(describe_transactions)
TXC_API(describe_producers)
TXC_API(find_coordinator)
TXC_API(init_producer_id)
TXC_API(write_txn_markers)
TXC_API(list_offsets)
#undef TXC_API

/* A decoded answer's bytes: strings and arrays point into them until txc_free. */
struct txc_reply {
    uint8_t *frame;
    void *arena;
    struct txc_reply *next;
};

struct txc {
    int timeout_ms;
    struct txc_reply *replies;
    struct kmsg_metadata_response md;
    const char *md_from; /* the bootstrap address that answered */
};

static void txc_free(struct txc *x)
{
    while (x->replies) {
        struct txc_reply *r = x->replies;
        x->replies = r->next;
        free(r->frame);
        free(r->arena);
        free(r);
    }
}

static bool split_host_port(const char *s, size_t len, char *host, size_t cap, uint16_t *port)
{
    const char *colon = NULL;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ':')
            colon = s + i;
    if (!colon || colon == s || (size_t)(colon - s) >= cap)
        return false;
    char num[8];
    size_t nl = len - (size_t)(colon + 1 - s);
    if (nl == 0 || nl >= sizeof num)
        return false;
    memcpy(num, colon + 1, nl);
    num[nl] = '\0';
    uint32_t p = 0;
    if (!cli_parse_u32(num, 1, 65535, &p))
        return false;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    *port = (uint16_t)p;
    return true;
}

/* true when every comma-separated entry of list is HOST:PORT. */
bool txn_cluster_bootstrap_valid(const char *list)
{
    char host[256];
    uint16_t port;
    for (const char *s = list;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (!split_host_port(s, len, host, sizeof host, &port))
            return false;
        if (!comma)
            return true;
        s = comma + 1;
    }
}

/* One round trip and its decode; the answer stays valid until txc_free. */
static int txc_call(struct txc *x, const char *host, uint16_t port, int16_t key, int16_t ver,
                    kclient_encode_fn enc, const void *req, txc_decode_fn dec, void *out)
{
    uint8_t *frame = NULL;
    size_t len = 0, body = 0;
    int rc = kclient_call(host, port, x->timeout_ms, key, ver, enc, req, &frame, &len, &body);
    if (rc)
        return rc;
    struct txc_reply *rp = calloc(1, sizeof(*rp));
    size_t bytes = len * 8 + 4096; /* decoded arrays never outgrow this */
    void *arena = malloc(bytes);
    if (!rp || !arena) {
        free(rp);
        free(arena);
        free(frame);
        return -ENOMEM;
    }
    *rp = (struct txc_reply){.frame = frame, .arena = arena, .next = x->replies};
    x->replies = rp;
    struct kp_arena a;
    struct kp_reader r;
    kp_arena_init(&a, arena, bytes);
    kp_reader_init(&r, frame + body, len - body);
    return dec(&r, ver, &a, out) ? -EPROTO : 0;
}

static const char *call_error(int rc)
{
    return rc == -EPROTO ? "not a Kafka answer (or the request is not served there)"
                         : strerror(-rc);
}

static const struct kmsg_metadata_broker *node_of(const struct txc *x, int32_t id)
{
    for (int32_t i = 0; i < x->md.brokers_count; i++)
        if (x->md.brokers[i].node_id == id)
            return &x->md.brokers[i];
    return NULL;
}

static int node_call(struct txc *x, const struct kmsg_metadata_broker *b, int16_t key, int16_t ver,
                     kclient_encode_fn enc, const void *req, txc_decode_fn dec, void *out)
{
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)b->host.len, b->host.ptr);
    return txc_call(x, host, (uint16_t)b->port, key, ver, enc, req, dec, out);
}

/* Metadata from the first bootstrap address that answers. Prints its own message. */
static int txc_metadata(struct txc *x, const char *bootstrap)
{
    struct kmsg_metadata_request q = {.topics = NULL, .topics_count = -1};
    int rc = -EINVAL;
    for (const char *s = bootstrap;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char host[256];
        uint16_t port = 0;
        if (split_host_port(s, len, host, sizeof host, &port)) {
            rc = txc_call(x, host, port, KAFKA_METADATA, TXC_METADATA_VERSION, enc_metadata, &q,
                          dec_metadata, &x->md);
            if (rc == 0) {
                x->md_from = s;
                return 0;
            }
            fprintf(stderr, "ringtail txn: %.*s: %s\n", (int)len, s, call_error(rc));
        }
        if (!comma)
            break;
        s = comma + 1;
    }
    return rc ? rc : -EINVAL;
}

static bool kstr_eq(struct kp_str a, struct kp_str b)
{
    return a.len == b.len && (a.len <= 0 || memcmp(a.ptr, b.ptr, (size_t)a.len) == 0);
}

static bool kstr_is(struct kp_str a, const char *b)
{
    size_t n = strlen(b);
    return a.len >= 0 && (size_t)a.len == n && memcmp(a.ptr, b, n) == 0;
}

static bool state_open(struct kp_str st)
{
    return !kstr_is(st, "Empty") && !kstr_is(st, "CompleteCommit") &&
           !kstr_is(st, "CompleteAbort") && !kstr_is(st, "Dead");
}

/* ---- the cluster's view: transactions by coordinator, open transactions by partition ---- */

struct view_txn {
    const struct kmsg_listed_transaction *listed;
    int32_t coordinator;
    const struct kmsg_transaction_state *described; /* NULL: not described (or not found) */
};

struct view_pin { /* one producer with an open transaction in one partition's log */
    struct kp_str topic;
    int32_t partition, leader;
    const struct kmsg_producer_state *producer;
};

struct view {
    struct view_txn *txns;
    size_t txns_count;
    struct view_pin *pins;
    size_t pins_count;
    int failures; /* TXC1 */
};

static void view_free(struct view *v)
{
    free(v->txns);
    free(v->pins);
    *v = (struct view){0};
}

/* Every node's ListTransactions (filtered by producer id when pid >= 0). */
static int view_list(struct txc *x, struct view *v, int64_t pid)
{
    struct kmsg_list_transactions_request q = {.duration_filter_ms = -1};
    int64_t pids[1] = {pid};
    if (pid >= 0) {
        q.producer_id_filters = pids;
        q.producer_id_filters_count = 1;
    }
    for (int32_t i = 0; i < x->md.brokers_count; i++) {
        const struct kmsg_metadata_broker *b = &x->md.brokers[i];
        struct kmsg_list_transactions_response r = {0};
        int rc = node_call(x, b, KAFKA_LIST_TRANSACTIONS, 0, enc_list_transactions, &q,
                           dec_list_transactions, &r);
        if (rc || r.error_code != KAFKA_NONE) { /* TXC1 */
            fprintf(stderr,
                    "ringtail txn: node %" PRId32 " (%.*s:%" PRId32 "): ListTransactions: %s\n",
                    b->node_id, (int)b->host.len, b->host.ptr, b->port,
                    rc ? call_error(rc) : kafka_error_name(r.error_code));
            v->failures++;
            continue;
        }
        if (r.transaction_states_count <= 0)
            continue;
        struct view_txn *n =
            realloc(v->txns, (v->txns_count + (size_t)r.transaction_states_count) * sizeof(*n));
        if (!n)
            return -ENOMEM;
        v->txns = n;
        for (int32_t k = 0; k < r.transaction_states_count; k++)
            v->txns[v->txns_count++] =
                (struct view_txn){.listed = &r.transaction_states[k], .coordinator = b->node_id};
    }
    return 0;
}

/* DescribeTransactions at each coordinator for its ids that `want` selects. */
static int view_describe(struct txc *x, struct view *v, bool all)
{
    for (int32_t i = 0; i < x->md.brokers_count; i++) {
        const struct kmsg_metadata_broker *b = &x->md.brokers[i];
        size_t n = 0;
        for (size_t k = 0; k < v->txns_count; k++)
            n += v->txns[k].coordinator == b->node_id &&
                 (all || state_open(v->txns[k].listed->transaction_state));
        if (n == 0)
            continue;
        struct kp_str *ids = calloc(n, sizeof(*ids));
        if (!ids)
            return -ENOMEM;
        n = 0;
        for (size_t k = 0; k < v->txns_count; k++)
            if (v->txns[k].coordinator == b->node_id &&
                (all || state_open(v->txns[k].listed->transaction_state)))
                ids[n++] = v->txns[k].listed->transactional_id;
        struct kmsg_describe_transactions_request q = {.transactional_ids = ids,
                                                       .transactional_ids_count = (int32_t)n};
        struct kmsg_describe_transactions_response r = {0};
        int rc = node_call(x, b, KAFKA_DESCRIBE_TRANSACTIONS, 0, enc_describe_transactions, &q,
                           dec_describe_transactions, &r);
        free(ids);
        if (rc) {
            fprintf(stderr, "ringtail txn: node %" PRId32 ": DescribeTransactions: %s\n",
                    b->node_id, call_error(rc));
            v->failures++;
            continue;
        }
        for (int32_t j = 0; j < r.transaction_states_count; j++) {
            const struct kmsg_transaction_state *st = &r.transaction_states[j];
            if (st->error_code != KAFKA_NONE) {
                /* the coordinator moved (16, 14) or the id expired since it was listed */
                fprintf(stderr, "ringtail txn: node %" PRId32 ": DescribeTransactions(%.*s): %s\n",
                        b->node_id, (int)st->transactional_id.len, st->transactional_id.ptr,
                        kafka_error_name(st->error_code));
                if (st->error_code != TXC_TRANSACTIONAL_ID_NOT_FOUND)
                    v->failures++;
                continue;
            }
            for (size_t k = 0; k < v->txns_count; k++)
                if (v->txns[k].coordinator == b->node_id &&
                    kstr_eq(v->txns[k].listed->transactional_id, st->transactional_id))
                    v->txns[k].described = st;
        }
    }
    return 0;
}

/* DescribeProducers at every leader for its partitions (only topic/partition when given). */
static int view_pins(struct txc *x, struct view *v, const char *topic, int32_t partition)
{
    for (int32_t i = 0; i < x->md.brokers_count; i++) {
        const struct kmsg_metadata_broker *b = &x->md.brokers[i];
        int32_t nt = 0;
        struct kmsg_txn_topic *qt = calloc((size_t)x->md.topics_count + 1, sizeof(*qt));
        int32_t *qp = NULL;
        size_t parts = 0;
        for (int32_t t = 0; t < x->md.topics_count; t++)
            parts += (size_t)x->md.topics[t].partitions_count;
        qp = calloc(parts + 1, sizeof(*qp));
        if (!qt || !qp) {
            free(qt);
            free(qp);
            return -ENOMEM;
        }
        size_t used = 0;
        for (int32_t t = 0; t < x->md.topics_count; t++) {
            const struct kmsg_metadata_topic *mt = &x->md.topics[t];
            if (topic && !kstr_is(mt->name, topic))
                continue;
            int32_t n = 0;
            for (int32_t p = 0; p < mt->partitions_count; p++) {
                const struct kmsg_metadata_partition *mp = &mt->partitions[p];
                if (mp->leader_id != b->node_id ||
                    (partition >= 0 && mp->partition_index != partition))
                    continue;
                qp[used + (size_t)n++] = mp->partition_index;
            }
            if (n == 0)
                continue;
            qt[nt++] = (struct kmsg_txn_topic){
                .name = mt->name, .partitions = qp + used, .partitions_count = n};
            used += (size_t)n;
        }
        if (nt == 0) {
            free(qt);
            free(qp);
            continue;
        }
        struct kmsg_describe_producers_request q = {.topics = qt, .topics_count = nt};
        struct kmsg_describe_producers_response r = {0};
        int rc = node_call(x, b, KAFKA_DESCRIBE_PRODUCERS, 0, enc_describe_producers, &q,
                           dec_describe_producers, &r);
        free(qt);
        free(qp);
        if (rc) {
            fprintf(stderr, "ringtail txn: node %" PRId32 ": DescribeProducers: %s\n", b->node_id,
                    call_error(rc));
            v->failures++;
            continue;
        }
        for (int32_t t = 0; t < r.topics_count; t++) {
            const struct kmsg_describe_producers_topic *rt = &r.topics[t];
            for (int32_t p = 0; p < rt->partitions_count; p++) {
                const struct kmsg_describe_producers_partition *rp = &rt->partitions[p];
                if (rp->error_code != KAFKA_NONE) {
                    fprintf(stderr,
                            "ringtail txn: node %" PRId32 ": DescribeProducers(%.*s-%" PRId32
                            "): %s\n",
                            b->node_id, (int)rt->name.len, rt->name.ptr, rp->partition_index,
                            kafka_error_name(rp->error_code));
                    v->failures++;
                    continue;
                }
                for (int32_t k = 0; k < rp->active_producers_count; k++) {
                    if (rp->active_producers[k].current_txn_start_offset < 0)
                        continue;
                    struct view_pin *n = realloc(v->pins, (v->pins_count + 1) * sizeof(*n));
                    if (!n)
                        return -ENOMEM;
                    v->pins = n;
                    v->pins[v->pins_count++] =
                        (struct view_pin){.topic = rt->name,
                                          .partition = rp->partition_index,
                                          .leader = b->node_id,
                                          .producer = &rp->active_producers[k]};
                }
            }
        }
    }
    return 0;
}

/* The open transaction that holds (topic, partition) for producer pid, or NULL. */
static const struct view_txn *live_holder(const struct view *v, struct kp_str topic,
                                          int32_t partition, int64_t pid)
{
    for (size_t k = 0; k < v->txns_count; k++) {
        const struct view_txn *t = &v->txns[k];
        const struct kmsg_transaction_state *d = t->described;
        if (t->listed->producer_id != pid || !state_open(t->listed->transaction_state) || !d)
            continue;
        for (int32_t i = 0; i < d->topic_partitions_count; i++) {
            if (!kstr_eq(d->topic_partitions[i].name, topic))
                continue;
            for (int32_t j = 0; j < d->topic_partitions[i].partition_indexes_count; j++)
                if (d->topic_partitions[i].partition_indexes[j] == partition)
                    return t;
        }
    }
    return NULL;
}

static const struct view_pin *pin_of(const struct view *v, struct kp_str topic, int32_t partition,
                                     int64_t pid)
{
    for (size_t k = 0; k < v->pins_count; k++)
        if (v->pins[k].partition == partition && v->pins[k].producer->producer_id == pid &&
            kstr_eq(v->pins[k].topic, topic))
            return &v->pins[k];
    return NULL;
}

/* The latest offset of topic-partition at node `leader` for isolation level iso (0: the high
 * watermark, 1: the last stable offset), as a consumer asks it (ListOffsets v2); -1 when not
 * answered. */
static int64_t latest_offset(struct txc *x, int32_t leader, struct kp_str topic, int32_t partition,
                             int8_t iso)
{
    const struct kmsg_metadata_broker *b = node_of(x, leader);
    if (!b)
        return -1;
    struct kmsg_list_offsets_partition qp = {.partition_index = partition,
                                             .current_leader_epoch = -1,
                                             .timestamp = -1,
                                             .max_num_offsets = 1};
    struct kmsg_list_offsets_topic qt = {.name = topic, .partitions = &qp, .partitions_count = 1};
    struct kmsg_list_offsets_request q = {
        .replica_id = -1, .isolation_level = iso, .topics = &qt, .topics_count = 1};
    struct kmsg_list_offsets_response r = {0};
    if (node_call(x, b, KAFKA_LIST_OFFSETS, 2, enc_list_offsets, &q, dec_list_offsets, &r) != 0 ||
        r.topics_count != 1 || r.topics[0].partitions_count != 1)
        return -1;
    const struct kmsg_list_offsets_partition_response *p = &r.topics[0].partitions[0];
    return p->partition_index == partition && p->error_code == KAFKA_NONE ? p->offset : -1;
}

static void print_offset(int64_t o)
{
    if (o >= 0)
        printf("%" PRId64 "\t", o);
    else
        printf("?\t");
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int txn_cmp(const void *a, const void *b)
{
    const struct view_txn *x = a, *y = b;
    struct kp_str s = x->listed->transactional_id, t = y->listed->transactional_id;
    int32_t n = s.len < t.len ? s.len : t.len;
    int c = n > 0 ? memcmp(s.ptr, t.ptr, (size_t)n) : 0;
    if (c)
        return c;
    if (s.len != t.len)
        return s.len < t.len ? -1 : 1;
    return x->coordinator < y->coordinator ? -1 : x->coordinator > y->coordinator;
}

static int pin_cmp(const void *a, const void *b)
{
    const struct view_pin *x = a, *y = b;
    int32_t n = x->topic.len < y->topic.len ? x->topic.len : y->topic.len;
    int c = n > 0 ? memcmp(x->topic.ptr, y->topic.ptr, (size_t)n) : 0;
    if (c)
        return c;
    if (x->topic.len != y->topic.len)
        return x->topic.len < y->topic.len ? -1 : 1;
    if (x->partition != y->partition)
        return x->partition < y->partition ? -1 : 1;
    int64_t p = x->producer->producer_id, q = y->producer->producer_id;
    return p < q ? -1 : p > q;
}

static void print_txn(const struct view *v, const struct view_txn *t, int64_t now)
{
    const struct kmsg_listed_transaction *l = t->listed;
    const struct kmsg_transaction_state *d = t->described;
    printf("%.*s\t%" PRId64 "\t", (int)l->transactional_id.len, l->transactional_id.ptr,
           l->producer_id);
    if (d)
        printf("%d\t", (int)d->producer_epoch);
    else
        printf("-\t");
    printf("%.*s\t", (int)l->transaction_state.len, l->transaction_state.ptr);
    if (d && d->transaction_start_time_ms >= 0)
        printf("%" PRId64 "\t",
               now > d->transaction_start_time_ms ? now - d->transaction_start_time_ms : 0);
    else
        printf("-\t");
    if (d)
        printf("%" PRId32 "\t", d->transaction_timeout_ms);
    else
        printf("-\t");
    printf("%" PRId32 "\t", t->coordinator);
    int printed = 0;
    for (int32_t i = 0; d && i < d->topic_partitions_count; i++) {
        const struct kmsg_transaction_partitions *tp = &d->topic_partitions[i];
        for (int32_t j = 0; j < tp->partition_indexes_count; j++) {
            const struct view_pin *pin =
                pin_of(v, tp->name, tp->partition_indexes[j], l->producer_id);
            printf("%s%.*s-%" PRId32, printed++ ? ", " : "", (int)tp->name.len, tp->name.ptr,
                   tp->partition_indexes[j]);
            if (pin)
                printf("(LSO %" PRId64 ")", pin->producer->current_txn_start_offset);
            else
                printf("(LSO -)");
        }
    }
    printf("%s\n", printed ? "" : "-");
}

int txn_cluster_list(const char *bootstrap, bool all, int timeout_ms)
{
    struct txc x = {.timeout_ms = timeout_ms};
    struct view v = {0};
    int ex = CLI_EXIT_OK;
    if (txc_metadata(&x, bootstrap) != 0) {
        txc_free(&x);
        return cli_fail("txn", "list: no node of %s answered Metadata", bootstrap);
    }
    int rc = view_list(&x, &v, -1);
    if (rc == 0)
        rc = view_describe(&x, &v, all);
    if (rc == 0)
        rc = view_pins(&x, &v, NULL, -1);
    if (rc) {
        ex = cli_fail("txn", "list: %s", strerror(-rc));
        goto out;
    }
    if (v.txns_count > 1)
        qsort(v.txns, v.txns_count, sizeof(*v.txns), txn_cmp);
    if (v.pins_count > 1)
        qsort(v.pins, v.pins_count, sizeof(*v.pins), pin_cmp);
    int64_t now = wall_ms();
    size_t shown = 0, hanging = 0;
    for (size_t k = 0; k < v.txns_count; k++)
        shown += all || state_open(v.txns[k].listed->transaction_state);
    for (size_t k = 0; k < v.pins_count; k++)
        hanging +=
            !live_holder(&v, v.pins[k].topic, v.pins[k].partition, v.pins[k].producer->producer_id);
    if (shown == 0 && hanging == 0)
        printf("no %stransactions in the cluster (%" PRId32 " node%s asked)\n", all ? "" : "open ",
               x.md.brokers_count, x.md.brokers_count == 1 ? "" : "s");
    if (shown > 0) {
        printf("ID\tPRODUCER_ID\tEPOCH\tSTATE\tAGE_MS\tTIMEOUT_MS\tCOORDINATOR\tPARTITIONS\n");
        for (size_t k = 0; k < v.txns_count; k++)
            if (all || state_open(v.txns[k].listed->transaction_state))
                print_txn(&v, &v.txns[k], now);
    }
    if (hanging > 0) {
        printf("pinned partitions with no live transaction:\n");
        printf("TOPIC\tPARTITION\tPRODUCER_ID\tEPOCH\tFIRST_OFFSET\tLSO\tHW\tLEADER\tID\tSTATE\n");
        for (size_t k = 0; k < v.pins_count; k++) {
            const struct view_pin *p = &v.pins[k];
            if (live_holder(&v, p->topic, p->partition, p->producer->producer_id))
                continue;
            const struct view_txn *owner = NULL;
            for (size_t j = 0; j < v.txns_count && !owner; j++)
                if (v.txns[j].listed->producer_id == p->producer->producer_id)
                    owner = &v.txns[j];
            printf("%.*s\t%" PRId32 "\t%" PRId64 "\t%" PRId32 "\t%" PRId64 "\t", (int)p->topic.len,
                   p->topic.ptr, p->partition, p->producer->producer_id,
                   p->producer->producer_epoch, p->producer->current_txn_start_offset);
            print_offset(latest_offset(&x, p->leader, p->topic, p->partition, 1));
            print_offset(latest_offset(&x, p->leader, p->topic, p->partition, 0));
            printf("%" PRId32 "\t", p->leader);
            if (owner)
                printf("%.*s\t%.*s\n", (int)owner->listed->transactional_id.len,
                       owner->listed->transactional_id.ptr,
                       (int)owner->listed->transaction_state.len,
                       owner->listed->transaction_state.ptr);
            else
                printf("-\t-\n");
        }
    }
    if (fflush(stdout) != 0)
        ex = cli_fail("txn", "list: writing stdout failed");
    else if (v.failures) /* TXC1 */
        ex = cli_fail("txn", "list: %d answer(s) missing (above): the view is incomplete",
                      v.failures);
out:
    view_free(&v);
    txc_free(&x);
    return ex;
}

/* ---- abort by transactional id: InitProducerId at the coordinator ---- */

struct coord {
    char host[256];
    uint16_t port;
    int32_t node;
};

/* FindCoordinator (v1, key type 1) at the first bootstrap address that answers NONE. */
static int16_t find_coordinator(struct txc *x, const char *bootstrap, const char *id,
                                struct coord *c)
{
    struct kmsg_find_coordinator_request q = {.key = kp_str_of(id), .key_type = 1};
    int16_t err = KAFKA_COORDINATOR_NOT_AVAILABLE;
    for (const char *s = bootstrap;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char host[256];
        uint16_t port = 0;
        struct kmsg_find_coordinator_response r = {0};
        if (split_host_port(s, len, host, sizeof host, &port) &&
            txc_call(x, host, port, KAFKA_FIND_COORDINATOR, 1, enc_find_coordinator, &q,
                     dec_find_coordinator, &r) == 0) {
            err = r.error_code;
            if (err == KAFKA_NONE && r.host.len > 0 && (size_t)r.host.len < sizeof c->host) {
                memcpy(c->host, r.host.ptr, (size_t)r.host.len);
                c->host[r.host.len] = '\0';
                c->port = (uint16_t)r.port;
                c->node = r.node_id;
                return KAFKA_NONE;
            }
        }
        if (!comma)
            return err;
        s = comma + 1;
    }
}

/* DescribeTransactions of one id at c: NONE with *out, or the error. */
static int16_t describe_one(struct txc *x, const struct coord *c, const char *id,
                            const struct kmsg_transaction_state **out)
{
    struct kp_str ids[1] = {kp_str_of(id)};
    struct kmsg_describe_transactions_request q = {.transactional_ids = ids,
                                                   .transactional_ids_count = 1};
    struct kmsg_describe_transactions_response r = {0};
    int rc = txc_call(x, c->host, c->port, KAFKA_DESCRIBE_TRANSACTIONS, 0,
                      enc_describe_transactions, &q, dec_describe_transactions, &r);
    if (rc)
        return KAFKA_COORDINATOR_NOT_AVAILABLE;
    if (r.transaction_states_count != 1 || !kstr_is(r.transaction_states[0].transactional_id, id))
        return KAFKA_COORDINATOR_NOT_AVAILABLE;
    *out = &r.transaction_states[0];
    return r.transaction_states[0].error_code;
}

static bool retriable(int16_t e)
{
    return e == KAFKA_NOT_COORDINATOR || e == KAFKA_COORDINATOR_LOAD_IN_PROGRESS ||
           e == KAFKA_COORDINATOR_NOT_AVAILABLE || e == KAFKA_CONCURRENT_TRANSACTIONS;
}

static void format_parts(const struct kmsg_transaction_state *d, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int32_t i = 0; d && i < d->topic_partitions_count; i++)
        for (int32_t j = 0; j < d->topic_partitions[i].partition_indexes_count; j++) {
            int n = snprintf(buf + at, cap - at, "%s%.*s-%" PRId32, at ? ", " : "",
                             (int)d->topic_partitions[i].name.len, d->topic_partitions[i].name.ptr,
                             d->topic_partitions[i].partition_indexes[j]);
            if (n < 0 || (size_t)n >= cap - at)
                return;
            at += (size_t)n;
        }
    if (at == 0)
        snprintf(buf, cap, "-");
}

int txn_cluster_abort_id(const char *bootstrap, const char *id, int timeout_ms)
{
    struct txc x = {.timeout_ms = timeout_ms};
    struct coord c = {0};
    const struct kmsg_transaction_state *d = NULL;
    int ex = CLI_EXIT_OK;
    int16_t e = KAFKA_NONE;
    /* The coordinator, then the id's open transaction (retried while the role moves). */
    int64_t deadline = wall_ms() + timeout_ms;
    for (;;) {
        e = find_coordinator(&x, bootstrap, id, &c);
        if (e == KAFKA_NONE)
            e = describe_one(&x, &c, id, &d);
        if (!retriable(e) || wall_ms() >= deadline)
            break;
        usleep(TXC_RETRY_SLEEP_US);
    }
    if (e == TXC_TRANSACTIONAL_ID_NOT_FOUND) {
        ex = cli_fail("txn",
                      "abort: no transactional id '%s' in the cluster (coordinator node "
                      "%" PRId32 ")",
                      id, c.node);
        goto out;
    }
    if (e != KAFKA_NONE) {
        ex = cli_fail("txn", "abort: '%s': the coordinator answers %s", id, kafka_error_name(e));
        goto out;
    }
    if (!state_open(d->transaction_state)) {
        ex = cli_fail("txn", "abort: transactional id '%s' has no open transaction (state %.*s)",
                      id, (int)d->transaction_state.len, d->transaction_state.ptr);
        goto out;
    }
    char parts[1024];
    format_parts(d, parts, sizeof parts);
    int64_t pid = d->producer_id;
    int epoch = d->producer_epoch;
    char state[40];
    snprintf(state, sizeof state, "%.*s", (int)d->transaction_state.len, d->transaction_state.ptr);
    /* InitProducerId for the id: the coordinator fences the producer and aborts (Kafka's rule
     * for a new instance); CONCURRENT_TRANSACTIONS while it completes, retried. */
    struct kmsg_init_producer_id_request q = {
        .transactional_id = kp_str_of(id),
        .transaction_timeout_ms = d->transaction_timeout_ms > 0 ? d->transaction_timeout_ms : 60000,
        .producer_id = -1,
        .producer_epoch = -1};
    struct kmsg_init_producer_id_response r = {0};
    deadline = wall_ms() + timeout_ms;
    for (;;) {
        int rc = txc_call(&x, c.host, c.port, KAFKA_INIT_PRODUCER_ID, 1, enc_init_producer_id, &q,
                          dec_init_producer_id, &r);
        e = rc ? KAFKA_COORDINATOR_NOT_AVAILABLE : r.error_code;
        if (!retriable(e) || wall_ms() >= deadline)
            break;
        usleep(TXC_RETRY_SLEEP_US);
        if (e == KAFKA_NOT_COORDINATOR || e == KAFKA_COORDINATOR_NOT_AVAILABLE)
            (void)find_coordinator(&x, bootstrap, id, &c);
    }
    if (e != KAFKA_NONE) { /* TXC3 */
        ex = cli_fail("txn", "abort: '%s': InitProducerId at node %" PRId32 " answers %s", id,
                      c.node, kafka_error_name(e));
        goto out;
    }
    const struct kmsg_transaction_state *after = NULL;
    if (describe_one(&x, &c, id, &after) == KAFKA_NONE)
        printf("aborted the transaction of '%s' (producer %" PRId64 ", epoch %d, %s; "
               "partitions %s) at its coordinator, node %" PRId32 "; now producer %" PRId64
               " epoch %d, %.*s\n",
               id, pid, epoch, state, parts, c.node, after->producer_id, (int)after->producer_epoch,
               (int)after->transaction_state.len, after->transaction_state.ptr);
    else
        printf("aborted the transaction of '%s' (producer %" PRId64 ", epoch %d, %s; "
               "partitions %s) at its coordinator, node %" PRId32 "; now producer %" PRId64
               " epoch %d\n",
               id, pid, epoch, state, parts, c.node, r.producer_id, (int)r.producer_epoch);
    if (fflush(stdout) != 0)
        ex = cli_fail("txn", "abort: writing stdout failed");
out:
    txc_free(&x);
    return ex;
}

/* ---- abort by partition: WriteTxnMarkers at the leader (kafka-transactions.sh abort) ---- */

/* The producer's state in topic-partition at its leader (DescribeProducers), or an error. */
static int16_t producer_at(struct txc *x, const struct kmsg_metadata_broker *leader,
                           const char *topic, int32_t partition, int64_t pid,
                           const struct kmsg_producer_state **out)
{
    int32_t parts[1] = {partition};
    struct kmsg_txn_topic qt = {
        .name = kp_str_of(topic), .partitions = parts, .partitions_count = 1};
    struct kmsg_describe_producers_request q = {.topics = &qt, .topics_count = 1};
    struct kmsg_describe_producers_response r = {0};
    *out = NULL;
    int rc = node_call(x, leader, KAFKA_DESCRIBE_PRODUCERS, 0, enc_describe_producers, &q,
                       dec_describe_producers, &r);
    if (rc)
        return KAFKA_REQUEST_TIMED_OUT;
    if (r.topics_count != 1 || r.topics[0].partitions_count != 1 ||
        r.topics[0].partitions[0].partition_index != partition)
        return KAFKA_UNKNOWN_SERVER_ERROR;
    const struct kmsg_describe_producers_partition *p = &r.topics[0].partitions[0];
    if (p->error_code != KAFKA_NONE)
        return p->error_code;
    for (int32_t k = 0; k < p->active_producers_count; k++)
        if (p->active_producers[k].producer_id == pid)
            *out = &p->active_producers[k];
    return KAFKA_NONE;
}

int txn_cluster_abort_partition(const char *bootstrap, const char *topic, uint32_t partition_u,
                                int64_t pid, int16_t epoch, bool force, int timeout_ms)
{
    struct txc x = {.timeout_ms = timeout_ms};
    struct view v = {0};
    int ex = CLI_EXIT_OK;
    int32_t partition = (int32_t)partition_u;
    if (txc_metadata(&x, bootstrap) != 0) {
        txc_free(&x);
        return cli_fail("txn", "abort: no node of %s answered Metadata", bootstrap);
    }
    int32_t leader_id = -2;
    for (int32_t t = 0; t < x.md.topics_count; t++)
        if (kstr_is(x.md.topics[t].name, topic))
            for (int32_t p = 0; p < x.md.topics[t].partitions_count; p++)
                if (x.md.topics[t].partitions[p].partition_index == partition)
                    leader_id = x.md.topics[t].partitions[p].leader_id;
    const struct kmsg_metadata_broker *leader = leader_id >= 0 ? node_of(&x, leader_id) : NULL;
    if (leader_id == -2) {
        ex = cli_fail("txn", "abort: no partition %s-%" PRId32 " in the cluster", topic, partition);
        goto out;
    }
    if (!leader) {
        ex = cli_fail("txn", "abort: %s-%" PRId32 " has no live leader now", topic, partition);
        goto out;
    }
    const struct kmsg_producer_state *ps = NULL;
    int16_t e = producer_at(&x, leader, topic, partition, pid, &ps);
    if (e != KAFKA_NONE) {
        ex = cli_fail("txn", "abort: DescribeProducers(%s-%" PRId32 ") at node %" PRId32 ": %s",
                      topic, partition, leader_id, kafka_error_name(e));
        goto out;
    }
    if (!ps || ps->current_txn_start_offset < 0) {
        ex = cli_fail("txn",
                      "abort: producer %" PRId64 " has no open transaction in %s-%" PRId32
                      " (leader node %" PRId32 ")",
                      pid, topic, partition, leader_id);
        goto out;
    }
    int64_t first = ps->current_txn_start_offset;
    int16_t use_epoch = epoch >= 0 ? epoch : (int16_t)ps->producer_epoch;
    if (!force) { /* TXC2: is it live at a coordinator? */
        int rc = view_list(&x, &v, pid);
        if (rc == 0)
            rc = view_describe(&x, &v, false);
        if (rc) {
            ex = cli_fail("txn", "abort: %s", strerror(-rc));
            goto out;
        }
        const struct view_txn *live = live_holder(&v, kp_str_of(topic), partition, pid);
        if (live) {
            ex = cli_fail(
                "txn",
                "abort: the transaction of producer %" PRId64 " in %s-%" PRId32
                " is '%.*s', which its coordinator (node %" PRId32
                ") holds %.*s: abort it everywhere with --transactional-id %.*s "
                "(--force writes the marker into this partition anyway)",
                pid, topic, partition, (int)live->listed->transactional_id.len,
                live->listed->transactional_id.ptr, live->coordinator,
                (int)live->listed->transaction_state.len, live->listed->transaction_state.ptr,
                (int)live->listed->transactional_id.len, live->listed->transactional_id.ptr);
            goto out;
        }
        if (v.failures) {
            ex = cli_fail("txn", "abort: not every node answered (above), so whether a "
                                 "coordinator holds the transaction open is unknown; --force "
                                 "writes the marker anyway");
            goto out;
        }
    }
    int32_t parts[1] = {partition};
    struct kmsg_txn_topic mt = {
        .name = kp_str_of(topic), .partitions = parts, .partitions_count = 1};
    struct kmsg_txn_marker mk = {.producer_id = pid,
                                 .producer_epoch = use_epoch,
                                 .transaction_result = false,
                                 .topics = &mt,
                                 .topics_count = 1,
                                 .coordinator_epoch = ps->coordinator_epoch >= 0
                                                          ? ps->coordinator_epoch
                                                          : 0}; /* Kafka's tool: orElse(0) */
    struct kmsg_write_txn_markers_request q = {.markers = &mk, .markers_count = 1};
    struct kmsg_write_txn_markers_response r = {0};
    int rc = node_call(&x, leader, KAFKA_WRITE_TXN_MARKERS, 1, enc_write_txn_markers, &q,
                       dec_write_txn_markers, &r);
    if (rc) { /* a single broker closes the connection: the row is internal (api_table.c KA8) */
        ex = cli_fail("txn",
                      "abort: WriteTxnMarkers at node %" PRId32 ": %s (a single broker does not "
                      "serve it: stop it and run `ringtail txn abort DIR --topic ...` there)",
                      leader_id, call_error(rc));
        goto out;
    }
    e = KAFKA_UNKNOWN_SERVER_ERROR; /* TXC3: NONE only for exactly what was asked */
    for (int32_t m = 0; m < r.markers_count; m++) {
        if (r.markers[m].producer_id != pid)
            continue;
        for (int32_t t = 0; t < r.markers[m].topics_count; t++) {
            const struct kmsg_topic_errors *te = &r.markers[m].topics[t];
            if (!kstr_is(te->name, topic))
                continue;
            for (int32_t p = 0; p < te->partitions_count; p++)
                if (te->partitions[p].partition_index == partition)
                    e = te->partitions[p].error_code;
        }
    }
    if (e != KAFKA_NONE) {
        ex = cli_fail("txn",
                      "abort: WriteTxnMarkers(producer %" PRId64 ", epoch %d, %s-%" PRId32
                      ") at node %" PRId32 ": %s",
                      pid, (int)use_epoch, topic, partition, leader_id, kafka_error_name(e));
        goto out;
    }
    const struct kmsg_producer_state *after = NULL;
    (void)producer_at(&x, leader, topic, partition, pid, &after);
    printf("aborted the transaction of producer %" PRId64 " (epoch %d) in %s-%" PRId32
           " at its leader, node %" PRId32 " (first offset %" PRId64 "; now %s)\n",
           pid, (int)use_epoch, topic, partition, leader_id, first,
           after && after->current_txn_start_offset >= 0 ? "still open" : "none open");
    if (fflush(stdout) != 0)
        ex = cli_fail("txn", "abort: writing stdout failed");
out:
    view_free(&v);
    txc_free(&x);
    return ex;
}
