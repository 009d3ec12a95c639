/*
 * mock_cluster.c — a traffic source for the golden captures, never a system under test: starts
 * librdkafka's mock cluster (one broker) with the topics named on the command line, prints
 * ringtail's API table (tools/kafka/proto/api.c) as "api KEY MIN MAX" lines for proxy.py — which
 * answers ApiVersions from it, so the clients negotiate exactly the versions they would with
 * `ringtail serve` — then "bootstrap HOST:PORT", and runs until killed. Built and run by
 * capture.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "tools/kafka/proto/api.h"

int main(int argc, char **argv)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "mock_cluster: %s\n", err);
        return 1;
    }
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, 1);
    if (!mc) {
        fprintf(stderr, "mock_cluster: cannot start the mock cluster\n");
        return 1;
    }
    /* The table proxy.py answers ApiVersions with: issue 12's APIs at their advertised range,
     * the others (issue 13's, not advertised yet) at their codec range so their requests can
     * be captured too. (rd_kafka_mock_set_apiversion on an API the mock has no handler for
     * breaks its own ApiVersions answer, so the proxy answers instead.) */
    size_t count = 0;
    const struct kafka_api *t = kafka_api_table(&count);
    for (size_t i = 0; i < count; i++)
        printf("api %d %d %d\n", t[i].key, t[i].advertised ? t[i].adv_min : t[i].codec_min,
               t[i].advertised ? t[i].adv_max : t[i].codec_max);
    for (int i = 1; i < argc; i++) { /* TOPIC:PARTITIONS */
        char name[200];
        int parts = 1;
        if (sscanf(argv[i], "%199[^:]:%d", name, &parts) >= 1)
            rd_kafka_mock_topic_create(mc, name, parts, 1);
    }
    printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));
    fflush(stdout);
    for (;;) /* until SIGTERM: a traffic source needs no orderly shutdown */
        pause();
}
