/*
 * cmd_cluster.c — `ringtail cluster status --bootstrap HOST:PORT`: what a cluster of `ringtail
 * serve --voters ...` nodes says about itself, asked over the wire as any Kafka client asks
 * (one Metadata request, v8, to the node given; tools/kafka/cluster/kclient.h): the nodes it
 * lists (registered and unfenced) and the replicas it names that it does not list (fenced —
 * its heartbeats stopped, or it is in or past a controlled shutdown — or never registered; a
 * separate shutting-down state is not in Metadata v8), the active controller, and per
 * partition its leader, leader epoch, replicas and ISR. Lag is "-" until data replication
 * exists (issue 24's later blocks). It reads nothing from a data directory and changes
 * nothing.
 */
#include <errno.h>
#include <inttypes.h>
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
            "    <TAB>isr<TAB>I,..<TAB>lag<TAB>-  (lag: '-' until data replication exists)\n"
            "--timeout-ms bounds the connection and the answer (5000).\n"
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

static bool listed(const struct kmsg_metadata_response *m, int32_t id)
{
    for (int32_t i = 0; i < m->brokers_count; i++)
        if (m->brokers[i].node_id == id)
            return true;
    return false;
}

static int cluster_status(int argc, char **argv)
{
    const char *bootstrap = NULL;
    uint32_t timeout_ms = 5000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cluster_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(argv[i], "--bootstrap") == 0 && i + 1 < argc)
            bootstrap = argv[++i];
        else if (strcmp(argv[i], "--timeout-ms") == 0 && i + 1 < argc) {
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
                bool dup = listed(&m, id);
                for (int j = 0; j < nseen && !dup; j++)
                    dup = seen[j] == id;
                if (!dup && nseen < 1024) {
                    seen[nseen++] = id;
                    printf("node\t%" PRId32 "\t-\tfenced\n", id);
                }
            }
        }
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
            printf("\tlag\t-\n");
        }
    }
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
