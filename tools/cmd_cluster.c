/*
 * cmd_cluster.c — `ringtail cluster status --bootstrap HOST:PORT`: what a cluster of `ringtail
 * serve --voters ...` nodes says about itself, asked over the wire as any Kafka client asks
 * (one Metadata request, v8, to the node given; tools/kafka/cluster/kclient.h): the nodes it
 * lists (registered and unfenced) and the replicas it names that it does not list (fenced —
 * its heartbeats stopped, or it is in or past a controlled shutdown — or never registered; a
 * separate shutting-down state is not in Metadata v8), the active controller, and per
 * partition its leader, leader epoch, replicas, ISR and each replica's lag in offsets (the
 * leader's log end minus the replica's, each asked of the node itself with OffsetForLeaderEpoch
 * at Kafka's debugging replica id: the lag section below). It reads nothing from a data
 * directory and changes nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tools/kafka/cluster/kclient.h"
#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/kmsg.h"

#define STATUS_METADATA_VERSION 8 /* brokers, controller, leader epochs, offline replicas */

static void cluster_usage(FILE *out)
{
    fprintf(out,
            "usage: ringtail cluster status --bootstrap HOST:PORT [--timeout-ms N]\n"
            "                               [--replica-listener ID@HOST:PORT ...]\n"
            "       ringtail cluster check [--prefix] DIR DIR [DIR...]   (see cluster check "
            "--help)\n"
            "\n"
            "Asks the node at HOST:PORT (a `ringtail serve --voters ...` node's Kafka listener)\n"
            "for the cluster's metadata and prints, one line each, tab-separated:\n"
            "  controller<TAB>ID                 the active controller (-1: none known)\n"
            "  node<TAB>ID<TAB>HOST:PORT<TAB>unfenced   every registered unfenced node\n"
            "  node<TAB>ID<TAB>-<TAB>fenced      a replica the node does not list (fenced:\n"
            "                                    heartbeats stopped, or it shut down or is\n"
            "                                    shutting down; or not registered)\n"
            "  partition<TAB>TOPIC<TAB>P<TAB>leader<TAB>L<TAB>epoch<TAB>E<TAB>replicas<TAB>R,..\n"
            "    <TAB>isr<TAB>I,..<TAB>lag<TAB>R:N,..<TAB>end<TAB>R:O,..\n"
            "    (O: replica R's log end offset, asked of node R itself; N: the leader's log\n"
            "    end minus R's, in offsets; '?': R not listed nor given by --replica-listener,\n"
            "    no answer within 1 s, or an error)\n"
            "--timeout-ms bounds the connection and the answer (5000; 1000 at most for each\n"
            "node's log ends). --replica-listener ID@HOST:PORT (repeatable) asks node ID at\n"
            "HOST:PORT for its log ends though Metadata does not list it (a fenced node, or\n"
            "one restarted and not yet registered): its lag is then a number, not '?'.\n"
            "\n"
            "Exit status: 0 printed, 1 the node did not answer, 2 usage error.\n");
}

static bool split_host_port(const char *s, char *host, size_t cap, uint16_t *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= cap)
        return false;
    uint32_t p = 0;
    if (!cli_parse_u32(colon + 1, 1, 65535, &p))
        return false;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    *port = (uint16_t)p;
    return true;
}

static int encode_metadata(struct kp_writer *w, int16_t v, const void *m)
{
    return kmsg_metadata_request_encode(w, v, m);
}

static void print_ids(const int32_t *ids, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        printf("%s%" PRId32, i ? "," : "", ids[i]);
    if (n == 0)
        putchar('-');
}

/* ---- lag: every replica's log end, asked of the replica itself ----------------------------
 *
 * The source: OffsetForLeaderEpoch (23, v4) sent to each listed node with replica_id -2,
 * Kafka's debugging id, which a cluster node answers for a partition it does not lead
 * (handle_epoch.c KE1), as Kafka's broker does. For a leader epoch E the answer is the end of
 * E in that node's log, the node's log end when E is its latest epoch, and (-1, -1) when E is
 * above its latest (rt_partition_end_offset_for_epoch). "Defined" is therefore true for every
 * epoch up to the node's latest and false above it, so the node's log end is the answer at the
 * largest defined epoch in [0, image's epoch]: asked first at the image's epoch (a replica that
 * appended in this epoch answers at once), then found by bisection (log2 rounds, each round
 * one request per node for all its unresolved partitions). A replica whose log has no epoch
 * holds no batch: its log end is 0. A replica's lag is the leader's log end minus its own (the
 * offset it fetches from next): Kafka's replica lag in offsets, as kafka-replica-verification
 * reports it. The two ends are read at slightly different moments, so under load a lag is
 * approximate; '?' when a node is not listed, does not answer, or answers an error. */

#define STATUS_EPOCH_VERSION 4 /* the version the replica fetcher sends (RF_EPOCH_VERSION) */
#define DEBUGGING_REPLICA_ID (-2)
#define LAG_ROUNDS_MAX       40 /* bisection over an int32 epoch needs at most 32 */
#define LAG_TIMEOUT_MS       1000
#define LAG_EXTRA_MAX        16 /* --replica-listener options */

struct lag_probe {
    int32_t topic, part, node; /* indexes into the Metadata answer; node is an id */
    int32_t lo, hi;            /* the answer is at the largest defined epoch in [lo, hi] */
    int64_t end;               /* the node's log end once known */
    bool first, done, unknown;
};

static int encode_epoch(struct kp_writer *w, int16_t v, const void *m)
{
    return kmsg_offset_for_leader_epoch_request_encode(w, v, m);
}

static const struct kmsg_metadata_broker *broker_of(const struct kmsg_metadata_response *m,
                                                    int32_t id)
{
    for (int32_t i = 0; i < m->brokers_count; i++)
        if (m->brokers[i].node_id == id)
            return &m->brokers[i];
    return NULL;
}

/* One round for node b: asks every unresolved probe of b once; moves lo/hi by the answers. */
static int lag_round(const struct kmsg_metadata_response *m, const struct kmsg_metadata_broker *b,
                     struct lag_probe *pr, size_t n, int timeout_ms, struct kclient_conn *conn)
{
    size_t asked = 0;
    for (size_t i = 0; i < n; i++)
        asked += pr[i].node == b->node_id && !pr[i].done;
    if (asked == 0)
        return 0;
    struct kmsg_epoch_topic *qt = calloc(asked, sizeof(*qt));
    struct kmsg_epoch_partition *qp = calloc(asked, sizeof(*qp));
    size_t *idx = calloc(asked, sizeof(*idx));
    size_t arena_bytes = asked * 256 + 4096;
    void *arena_buf = malloc(arena_bytes);
    int rc = qt && qp && idx && arena_buf ? 0 : -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct lag_probe *p = &pr[i];
        if (p->node != b->node_id || p->done)
            continue;
        const struct kmsg_metadata_topic *mt = &m->topics[p->topic];
        int32_t ask = p->first ? p->hi : p->lo + (p->hi - p->lo + 1) / 2;
        qp[k] = (struct kmsg_epoch_partition){.partition = mt->partitions[p->part].partition_index,
                                              .current_leader_epoch = -1,
                                              .leader_epoch = ask};
        qt[k] = (struct kmsg_epoch_topic){
            .topic = mt->name, .partitions = &qp[k], .partitions_count = 1};
        idx[k++] = i;
    }
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)b->host.len, b->host.ptr);
    uint8_t *frame = NULL;
    size_t flen = 0, body = 0;
    struct kmsg_offset_for_leader_epoch_request q = {
        .replica_id = DEBUGGING_REPLICA_ID, .topics = qt, .topics_count = (int32_t)asked};
    if (rc == 0)
        rc = kclient_conn_call(conn, host, (uint16_t)b->port, timeout_ms,
                               KAFKA_OFFSET_FOR_LEADER_EPOCH, STATUS_EPOCH_VERSION, encode_epoch,
                               &q, &frame, &flen, &body);
    struct kmsg_offset_for_leader_epoch_response r = {0};
    if (rc == 0) {
        struct kp_arena a;
        struct kp_reader rd;
        kp_arena_init(&a, arena_buf, arena_bytes);
        kp_reader_init(&rd, frame + body, flen - body);
        rc = kmsg_offset_for_leader_epoch_response_decode(&rd, STATUS_EPOCH_VERSION, &a, &r)
                 ? -EPROTO
                 : 0;
    }
    if (rc == 0 && r.topics_count != (int32_t)asked)
        rc = -EPROTO;
    for (size_t j = 0; j < asked; j++) {
        struct lag_probe *p = &pr[idx[j]];
        const struct kmsg_epoch_end_offset *e =
            rc == 0 && r.topics[j].partitions_count == 1 ? &r.topics[j].partitions[0] : NULL;
        if (!e || e->partition != qp[j].partition || e->error_code != KAFKA_NONE) {
            p->done = p->unknown = true; /* no answer, or an error: '?' */
            continue;
        }
        bool defined = e->end_offset >= 0;
        if (defined) {
            p->lo = qp[j].leader_epoch;
            p->end = e->end_offset;
        } else {
            p->hi = qp[j].leader_epoch - 1;
        }
        p->first = false;
        if (p->lo >= p->hi) {
            p->done = true;
            if (p->lo < 0)
                p->end = 0; /* no epoch at all: no batch */
        }
    }
    free(frame);
    free(arena_buf);
    free(idx);
    free(qp);
    free(qt);
    return rc;
}

/* Fills pr (one per replica of every partition, in Metadata's order) with each log end, asking
 * every node of `ask` (the listed brokers, then --replica-listener ones not listed). */
static void lag_collect(const struct kmsg_metadata_response *m,
                        const struct kmsg_metadata_broker *ask, int32_t ask_count,
                        struct lag_probe *pr, size_t n, int timeout_ms)
{
    for (int32_t i = 0; i < ask_count; i++) {
        struct kclient_conn conn = KCLIENT_CONN_INIT;
        for (int round = 0; round < LAG_ROUNDS_MAX; round++) {
            if (lag_round(m, &ask[i], pr, n, timeout_ms, &conn) != 0)
                break; /* every probe of the node asked this round is now unknown */
            bool pending = false;
            for (size_t k = 0; k < n && !pending; k++)
                pending = pr[k].node == ask[i].node_id && !pr[k].done;
            if (!pending)
                break;
        }
        kclient_conn_close(&conn);
    }
}

static void print_lag(const struct lag_probe *pr, int32_t count, int32_t leader)
{
    const struct lag_probe *lp = NULL;
    for (int32_t k = 0; k < count; k++)
        if (pr[k].node == leader && pr[k].done && !pr[k].unknown)
            lp = &pr[k];
    for (int32_t k = 0; k < count; k++) {
        printf("%s%" PRId32 ":", k ? "," : "", pr[k].node);
        if (lp && pr[k].done && !pr[k].unknown)
            printf("%" PRId64, lp->end - pr[k].end);
        else
            putchar('?');
    }
    if (count == 0)
        putchar('-');
    printf("\tend\t");
    for (int32_t k = 0; k < count; k++) {
        printf("%s%" PRId32 ":", k ? "," : "", pr[k].node);
        if (pr[k].done && !pr[k].unknown)
            printf("%" PRId64, pr[k].end);
        else
            putchar('?');
    }
    if (count == 0)
        putchar('-');
}

static int cluster_status(int argc, char **argv)
{
    const char *bootstrap = NULL;
    uint32_t timeout_ms = 5000;
    struct kmsg_metadata_broker extra[LAG_EXTRA_MAX];
    int32_t extra_count = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cluster_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(argv[i], "--bootstrap") == 0 && i + 1 < argc)
            bootstrap = argv[++i];
        else if (strcmp(argv[i], "--replica-listener") == 0 && i + 1 < argc) {
            /* ID@HOST:PORT: a node to ask for its log ends though Metadata does not list it */
            const char *v = argv[++i], *at = strchr(v, '@'), *colon = strrchr(v, ':');
            uint32_t id = 0, port = 0;
            char idbuf[16];
            if (!at || !colon || colon < at || at - v >= (ptrdiff_t)sizeof(idbuf) ||
                extra_count == LAG_EXTRA_MAX)
                return cli_usage("cluster", "--replica-listener needs ID@HOST:PORT (at most %d)",
                                 LAG_EXTRA_MAX);
            memcpy(idbuf, v, (size_t)(at - v));
            idbuf[at - v] = 0;
            if (!cli_parse_u32(idbuf, 0, INT32_MAX, &id) ||
                !cli_parse_u32(colon + 1, 1, 65535, &port) || colon == at + 1)
                return cli_usage("cluster", "--replica-listener '%s' is not ID@HOST:PORT", v);
            extra[extra_count++] = (struct kmsg_metadata_broker){
                .node_id = (int32_t)id,
                .host = {.ptr = at + 1, .len = (int32_t)(colon - at - 1)},
                .port = (int32_t)port};
        } else if (strcmp(argv[i], "--timeout-ms") == 0 && i + 1 < argc) {
            if (!cli_parse_u32(argv[++i], 1, 600000, &timeout_ms))
                return cli_usage("cluster", "--timeout-ms needs 1..600000");
        } else
            return cli_usage("cluster", "unknown argument %s", argv[i]);
    }
    char host[256];
    uint16_t port = 0;
    if (!bootstrap)
        return cli_usage("cluster", "status needs --bootstrap HOST:PORT");
    if (!split_host_port(bootstrap, host, sizeof host, &port))
        return cli_usage("cluster", "--bootstrap '%s' is not HOST:PORT", bootstrap);
    struct kmsg_metadata_request q = {.topics = NULL, .topics_count = -1};
    uint8_t *frame = NULL;
    size_t frame_len = 0, body_at = 0;
    int rc = kclient_call(host, port, (int)timeout_ms, KAFKA_METADATA, STATUS_METADATA_VERSION,
                          encode_metadata, &q, &frame, &frame_len, &body_at);
    if (rc)
        return cli_fail("cluster", "%s: %s", bootstrap,
                        rc == -EPROTO ? "not a Kafka answer" : strerror(-rc));
    size_t arena_bytes = frame_len * 4 + 4096; /* decoded arrays never outgrow this */
    void *arena_buf = malloc(arena_bytes);
    struct kmsg_metadata_response m;
    struct kp_arena a;
    struct kp_reader r;
    rc = arena_buf ? 0 : -ENOMEM;
    if (rc == 0) {
        kp_arena_init(&a, arena_buf, arena_bytes);
        kp_reader_init(&r, frame + body_at, frame_len - body_at);
        rc = kmsg_metadata_response_decode(&r, STATUS_METADATA_VERSION, &a, &m);
    }
    if (rc) {
        free(arena_buf);
        free(frame);
        return cli_fail("cluster", "%s: the Metadata answer does not decode", bootstrap);
    }
    size_t probes = 0;
    for (int32_t t = 0; t < m.topics_count; t++)
        for (int32_t p = 0; p < m.topics[t].partitions_count; p++)
            probes += (size_t)m.topics[t].partitions[p].replica_nodes_count;
    struct lag_probe *pr = calloc(probes ? probes : 1, sizeof(*pr));
    if (!pr) {
        free(arena_buf);
        free(frame);
        return cli_fail("cluster", "out of memory");
    }
    size_t n = 0;
    for (int32_t t = 0; t < m.topics_count; t++)
        for (int32_t p = 0; p < m.topics[t].partitions_count; p++) {
            const struct kmsg_metadata_partition *mp = &m.topics[t].partitions[p];
            for (int32_t k = 0; k < mp->replica_nodes_count; k++, n++) {
                int32_t id = mp->replica_nodes[k];
                pr[n] = (struct lag_probe){.topic = t,
                                           .part = p,
                                           .node = id,
                                           .lo = -1,
                                           .hi = mp->leader_epoch,
                                           .first = true};
                bool reachable = broker_of(&m, id) != NULL;
                for (int32_t x = 0; x < extra_count && !reachable; x++)
                    reachable = extra[x].node_id == id;
                if (!reachable || mp->leader_epoch < 0)
                    pr[n].done = pr[n].unknown = true;
            }
        }
    /* the nodes to ask: the listed ones, then each --replica-listener not listed */
    struct kmsg_metadata_broker *ask =
        calloc((size_t)m.brokers_count + (size_t)extra_count + 1, sizeof(*ask));
    int32_t ask_count = 0;
    for (int32_t i = 0; ask && i < m.brokers_count; i++)
        ask[ask_count++] = m.brokers[i];
    for (int32_t x = 0; ask && x < extra_count; x++)
        if (!broker_of(&m, extra[x].node_id))
            ask[ask_count++] = extra[x];
    /* a node that accepts and never answers (SIGSTOP) costs at most this, once */
    lag_collect(&m, ask, ask_count, pr, n,
                timeout_ms < LAG_TIMEOUT_MS ? (int)timeout_ms : LAG_TIMEOUT_MS);
    free(ask);
    printf("controller\t%" PRId32 "\n", m.controller_id);
    for (int32_t i = 0; i < m.brokers_count; i++)
        printf("node\t%" PRId32 "\t%.*s:%" PRId32 "\tunfenced\n", m.brokers[i].node_id,
               (int)m.brokers[i].host.len, m.brokers[i].host.ptr, m.brokers[i].port);
    /* replicas not listed: fenced (or never registered); each once, in order of first sight */
    int32_t seen[1024];
    int nseen = 0;
    for (int32_t t = 0; t < m.topics_count; t++)
        for (int32_t p = 0; p < m.topics[t].partitions_count; p++) {
            const struct kmsg_metadata_partition *mp = &m.topics[t].partitions[p];
            for (int32_t k = 0; k < mp->replica_nodes_count; k++) {
                int32_t id = mp->replica_nodes[k];
                bool dup = broker_of(&m, id) != NULL;
                for (int j = 0; j < nseen && !dup; j++)
                    dup = seen[j] == id;
                if (!dup && nseen < 1024) {
                    seen[nseen++] = id;
                    printf("node\t%" PRId32 "\t-\tfenced\n", id);
                }
            }
        }
    n = 0;
    for (int32_t t = 0; t < m.topics_count; t++) {
        const struct kmsg_metadata_topic *mt = &m.topics[t];
        for (int32_t p = 0; p < mt->partitions_count; p++) {
            const struct kmsg_metadata_partition *mp = &mt->partitions[p];
            printf("partition\t%.*s\t%" PRId32 "\tleader\t%" PRId32 "\tepoch\t%" PRId32
                   "\treplicas\t",
                   (int)mt->name.len, mt->name.ptr, mp->partition_index, mp->leader_id,
                   mp->leader_epoch);
            print_ids(mp->replica_nodes, mp->replica_nodes_count);
            printf("\tisr\t");
            print_ids(mp->isr_nodes, mp->isr_nodes_count);
            printf("\tlag\t");
            print_lag(&pr[n], mp->replica_nodes_count, mp->leader_id);
            putchar('\n');
            n += (size_t)mp->replica_nodes_count;
        }
    }
    free(pr);
    free(arena_buf);
    free(frame);
    return CLI_EXIT_OK;
}

int cmd_cluster(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cluster_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "status") == 0)
        return cluster_status(argc - 1, argv + 1);
    if (strcmp(argv[1], "check") == 0)
        return cmd_cluster_check(argc - 1, argv + 1);
    return cli_usage("cluster", "unknown subcommand '%s' (status, check)", argv[1]);
}
