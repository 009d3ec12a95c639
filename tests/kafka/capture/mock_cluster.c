/*
 * mock_cluster.c — a traffic source for the golden captures, never a system under test: starts
 * librdkafka's mock cluster (one broker), clamps every API's versions to what ringtail's table
 * (tools/kafka/api.c) says — the advertised range for issue 12's APIs, the codec range for the
 * rest — and disables every API ringtail does not know, so the clients negotiate with it exactly
 * the versions they would negotiate with `ringtail serve`. Prints "bootstrap HOST:PORT" and runs
 * until stdin closes. Built and run by capture.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "tools/kafka/api.h"

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
    for (int16_t key = 0; key < 80; key++) {
        const struct kafka_api *a = kafka_api_find(key);
        if (!a)
            rd_kafka_mock_set_apiversion(mc, key, -1, -1);
        else if (a->advertised)
            rd_kafka_mock_set_apiversion(mc, key, a->adv_min, a->adv_max);
        else
            rd_kafka_mock_set_apiversion(mc, key, a->codec_min, a->codec_max);
    }
    for (int i = 1; i < argc; i++) { /* TOPIC:PARTITIONS */
        char name[200];
        int parts = 1;
        if (sscanf(argv[i], "%199[^:]:%d", name, &parts) >= 1)
            rd_kafka_mock_topic_create(mc, name, parts, 1);
    }
    printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));
    fflush(stdout);
    char buf[64];
    while (read(0, buf, sizeof buf) > 0)
        ;
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return 0;
}
