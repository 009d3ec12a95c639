/*
 * rdk_offsets.c — librdkafka's offset commits with metadata against `ringtail serve` (what
 * librdkafka's own test 0099 does), for tests/cli_kafka_groups.sh. It only drives the client and
 * prints what the client said; the driver checks the lines.
 *
 *   rdk_offsets BROKER TOPIC GROUP commit   a consumer of GROUP (no subscription) commits
 *                                           TOPIC-0 at 7 with metadata "m-0099", TOPIC-1 at 9
 *                                           with 5000 bytes of metadata (over Kafka's 4096).
 *                                           Prints "commit P ERR" per partition (ERR the
 *                                           client's error name, NO_ERROR when stored).
 *   rdk_offsets BROKER TOPIC GROUP txn      a transactional producer ("rdk-off") commits one
 *                                           record to TOPIC-2 and send_offsets_to_transaction
 *                                           TOPIC-2 at 3 with metadata "txn-meta".
 *   rdk_offsets BROKER TOPIC GROUP fetch    prints "committed P OFFSET METADATA" for TOPIC
 *                                           partitions 0-2 (rd_kafka_committed: OffsetFetch),
 *                                           METADATA "-" when empty.
 * Exit 0 when the client calls returned, 1 with the client's error on stderr otherwise.
 */
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void conf_set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
    char err[512];
    if (rd_kafka_conf_set(conf, k, v, err, sizeof err)) {
        fprintf(stderr, "conf %s: %s\n", k, err);
        exit(1);
    }
}

static rd_kafka_t *client(rd_kafka_type_t type, rd_kafka_conf_t *conf)
{
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "rd_kafka_new: %s\n", err);
        exit(1);
    }
    return rk;
}

static rd_kafka_t *consumer(const char *broker, const char *group)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    conf_set(conf, "bootstrap.servers", broker);
    conf_set(conf, "group.id", group);
    conf_set(conf, "enable.auto.commit", "false");
    return client(RD_KAFKA_CONSUMER, conf);
}

static int commit(const char *broker, const char *topic, const char *group)
{
    rd_kafka_t *rk = consumer(broker, group);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(2);
    rd_kafka_topic_partition_t *a = rd_kafka_topic_partition_list_add(l, topic, 0);
    a->offset = 7;
    a->metadata = strdup("m-0099");
    a->metadata_size = strlen("m-0099");
    rd_kafka_topic_partition_t *b = rd_kafka_topic_partition_list_add(l, topic, 1);
    b->offset = 9;
    b->metadata_size = 5000;
    b->metadata = malloc(b->metadata_size);
    memset(b->metadata, 'x', b->metadata_size);
    rd_kafka_resp_err_t e = rd_kafka_commit(rk, l, 0);
    printf("commit result %s\n", rd_kafka_err2name(e));
    for (int i = 0; i < l->cnt; i++)
        printf("commit %d %s\n", l->elems[i].partition, rd_kafka_err2name(l->elems[i].err));
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return 0;
}

static int txn(const char *broker, const char *topic, const char *group)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    conf_set(conf, "bootstrap.servers", broker);
    conf_set(conf, "transactional.id", "rdk-off");
    rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, conf);
    rd_kafka_error_t *err = rd_kafka_init_transactions(rk, 30000);
    if (!err)
        err = rd_kafka_begin_transaction(rk);
    if (!err) {
        rd_kafka_resp_err_t e =
            rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(2),
                              RD_KAFKA_V_VALUE("t", 1), RD_KAFKA_V_END);
        if (e) {
            fprintf(stderr, "produce: %s\n", rd_kafka_err2str(e));
            return 1;
        }
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_t *p = rd_kafka_topic_partition_list_add(l, topic, 2);
        p->offset = 3;
        p->metadata = strdup("txn-meta");
        p->metadata_size = strlen("txn-meta");
        rd_kafka_consumer_group_metadata_t *md = rd_kafka_consumer_group_metadata_new(group);
        err = rd_kafka_send_offsets_to_transaction(rk, l, md, 30000);
        rd_kafka_consumer_group_metadata_destroy(md);
        rd_kafka_topic_partition_list_destroy(l);
    }
    if (!err)
        err = rd_kafka_commit_transaction(rk, 30000);
    if (err) {
        fprintf(stderr, "transaction: %s\n", rd_kafka_error_string(err));
        rd_kafka_error_destroy(err);
        rd_kafka_destroy(rk);
        return 1;
    }
    rd_kafka_destroy(rk);
    return 0;
}

static int fetch(const char *broker, const char *topic, const char *group)
{
    rd_kafka_t *rk = consumer(broker, group);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(3);
    for (int p = 0; p < 3; p++)
        rd_kafka_topic_partition_list_add(l, topic, p);
    rd_kafka_resp_err_t e = rd_kafka_committed(rk, l, 10000);
    if (e) {
        fprintf(stderr, "rd_kafka_committed: %s\n", rd_kafka_err2str(e));
        return 1;
    }
    for (int i = 0; i < l->cnt; i++) {
        const rd_kafka_topic_partition_t *p = &l->elems[i];
        printf("committed %d %" PRId64 " %.*s\n", p->partition, p->offset,
               p->metadata_size ? (int)p->metadata_size : 1,
               p->metadata_size ? (const char *)p->metadata : "-");
    }
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: rdk_offsets BROKER TOPIC GROUP commit|txn|fetch\n");
        return 1;
    }
    if (strcmp(argv[4], "commit") == 0)
        return commit(argv[1], argv[2], argv[3]);
    if (strcmp(argv[4], "txn") == 0)
        return txn(argv[1], argv[2], argv[3]);
    if (strcmp(argv[4], "fetch") == 0)
        return fetch(argv[1], argv[2], argv[3]);
    fprintf(stderr, "unknown command %s\n", argv[4]);
    return 1;
}
