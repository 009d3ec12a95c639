/*
 * rdk_group_admin.c — librdkafka's AdminClient deleting groups and offsets against
 * `ringtail serve` (DeleteGroups, OffsetDelete), for tests/cli_kafka_group_delete.sh. It only
 * drives the client and prints what the client said; the driver checks the lines.
 *
 *   rdk_group_admin BROKER delete-groups G...          rd_kafka_DeleteGroups; prints
 *                                                      "group G ERR" per group
 *   rdk_group_admin BROKER delete-offsets G TOPIC P... rd_kafka_DeleteConsumerGroupOffsets;
 *                                                      prints "offsets ERR" (the request's)
 *                                                      and "partition P ERR" per partition
 *   rdk_group_admin BROKER list-groups [STATE...]      rd_kafka_ListConsumerGroups (ListGroups,
 *                                                      v4 with a states filter); prints
 *                                                      "listed G STATE" per group
 * ERR is the client's error name (NO_ERROR when deleted); RDK_DEBUG sets librdkafka's debug. Exit 0 when the admin call returned
 * a result, 1 with the client's error on stderr otherwise.
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rd_kafka_t *admin(const char *broker)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", broker, err, sizeof err)) {
        fprintf(stderr, "conf: %s\n", err);
        exit(1);
    }
    if (getenv("RDK_DEBUG") &&
        rd_kafka_conf_set(conf, "debug", getenv("RDK_DEBUG"), err, sizeof err)) {
        fprintf(stderr, "conf: %s\n", err);
        exit(1);
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "rd_kafka_new: %s\n", err);
        exit(1);
    }
    return rk;
}

/* Waits for the admin result of type `type` on q (30 s). */
static rd_kafka_event_t *result(rd_kafka_queue_t *q, rd_kafka_event_type_t type)
{
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    if (!ev || rd_kafka_event_type(ev) != type) {
        fprintf(stderr, "no admin result (%s)\n", ev ? rd_kafka_event_name(ev) : "timeout");
        exit(1);
    }
    return ev;
}

static int delete_groups(rd_kafka_t *rk, char **names, int n)
{
    rd_kafka_DeleteGroup_t **gs = calloc((size_t)n, sizeof(*gs));
    for (int i = 0; i < n; i++)
        gs[i] = rd_kafka_DeleteGroup_new(names[i]);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DeleteGroups(rk, gs, (size_t)n, NULL, q);
    rd_kafka_event_t *ev = result(q, RD_KAFKA_EVENT_DELETEGROUPS_RESULT);
    if (rd_kafka_event_error(ev))
        printf("request %s\n", rd_kafka_err2name(rd_kafka_event_error(ev)));
    size_t cnt = 0;
    const rd_kafka_group_result_t **rs =
        rd_kafka_DeleteGroups_result_groups(rd_kafka_event_DeleteGroups_result(ev), &cnt);
    for (size_t i = 0; i < cnt; i++) {
        const rd_kafka_error_t *e = rd_kafka_group_result_error(rs[i]);
        printf("group %s %s\n", rd_kafka_group_result_name(rs[i]),
               e ? rd_kafka_error_name(e) : "NO_ERROR");
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_DeleteGroup_destroy_array(gs, (size_t)n);
    free(gs);
    return 0;
}

static int delete_offsets(rd_kafka_t *rk, const char *group, const char *topic, char **ps, int n)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
    for (int i = 0; i < n; i++)
        rd_kafka_topic_partition_list_add(l, topic, atoi(ps[i]));
    rd_kafka_DeleteConsumerGroupOffsets_t *d = rd_kafka_DeleteConsumerGroupOffsets_new(group, l);
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DeleteConsumerGroupOffsets(rk, &d, 1, NULL, q);
    rd_kafka_event_t *ev = result(q, RD_KAFKA_EVENT_DELETECONSUMERGROUPOFFSETS_RESULT);
    printf("offsets %s\n", rd_kafka_err2name(rd_kafka_event_error(ev)));
    size_t cnt = 0;
    const rd_kafka_group_result_t **rs = rd_kafka_DeleteConsumerGroupOffsets_result_groups(
        rd_kafka_event_DeleteConsumerGroupOffsets_result(ev), &cnt);
    for (size_t i = 0; i < cnt; i++) {
        const rd_kafka_error_t *e = rd_kafka_group_result_error(rs[i]);
        if (e)
            printf("group %s %s\n", rd_kafka_group_result_name(rs[i]), rd_kafka_error_name(e));
        const rd_kafka_topic_partition_list_t *pl = rd_kafka_group_result_partitions(rs[i]);
        for (int j = 0; pl && j < pl->cnt; j++)
            printf("partition %d %s\n", pl->elems[j].partition,
                   rd_kafka_err2name(pl->elems[j].err));
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_DeleteConsumerGroupOffsets_destroy(d);
    return 0;
}

static int list_groups(rd_kafka_t *rk, char **states, int n)
{
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS);
    rd_kafka_consumer_group_state_t want[8];
    for (int i = 0; i < n && i < 8; i++)
        want[i] = rd_kafka_consumer_group_state_code(states[i]);
    if (n) {
        rd_kafka_error_t *e =
            rd_kafka_AdminOptions_set_match_consumer_group_states(o, want, (size_t)(n < 8 ? n : 8));
        if (e) {
            fprintf(stderr, "states: %s\n", rd_kafka_error_string(e));
            return 1;
        }
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_ListConsumerGroups(rk, o, q);
    rd_kafka_event_t *ev = result(q, RD_KAFKA_EVENT_LISTCONSUMERGROUPS_RESULT);
    if (rd_kafka_event_error(ev))
        printf("request %s\n", rd_kafka_err2name(rd_kafka_event_error(ev)));
    const rd_kafka_ListConsumerGroups_result_t *res = rd_kafka_event_ListConsumerGroups_result(ev);
    size_t cnt = 0;
    const rd_kafka_ConsumerGroupListing_t **gs =
        rd_kafka_ListConsumerGroups_result_valid(res, &cnt);
    for (size_t i = 0; i < cnt; i++)
        printf("listed %s %s\n", rd_kafka_ConsumerGroupListing_group_id(gs[i]),
               rd_kafka_consumer_group_state_name(rd_kafka_ConsumerGroupListing_state(gs[i])));
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_AdminOptions_destroy(o);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[2], "list-groups") == 0) {
        rd_kafka_t *rk = admin(argv[1]);
        int rc = list_groups(rk, argv + 3, argc - 3);
        rd_kafka_destroy(rk);
        return rc;
    }
    if (argc >= 4 && strcmp(argv[2], "delete-groups") == 0) {
        rd_kafka_t *rk = admin(argv[1]);
        int rc = delete_groups(rk, argv + 3, argc - 3);
        rd_kafka_destroy(rk);
        return rc;
    }
    if (argc >= 6 && strcmp(argv[2], "delete-offsets") == 0) {
        rd_kafka_t *rk = admin(argv[1]);
        int rc = delete_offsets(rk, argv[3], argv[4], argv + 5, argc - 5);
        rd_kafka_destroy(rk);
        return rc;
    }
    fprintf(stderr,
            "usage: rdk_group_admin BROKER delete-groups G... | delete-offsets G TOPIC P...\n");
    return 2;
}
