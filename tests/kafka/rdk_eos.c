/*
 * rdk_eos.c — an exactly-once pipeline on librdkafka's C API, for the cluster's transaction
 * fault tests (tests/cluster/eos_run.py, issue 25 item 4): the consume-transform-produce loop
 * librdkafka's own examples/transactions.c runs, one process. It only drives the client and
 * reports what the client said; the runner's checker judges the topics.
 *
 *   rdk_eos BOOTSTRAP SRC DST GROUP TRANSACTIONAL_ID
 *
 * A consumer of SRC in GROUP (read_committed, no auto commit) and a transactional producer:
 * per batch (up to 50 records) it begins a transaction, writes "o-<value>" to DST's partition of
 * the same number, sends the consumed offsets with the consumer's group metadata (KIP-447) and
 * commits. The rules are eos.py's EW1: an abortable error aborts and rewinds the consumer to the
 * group's committed offsets; a retriable commit error retries the commit; a fatal error (a
 * fenced producer) destroys both clients and starts again under the same transactional id.
 * It runs until SIGTERM or SIGINT, then prints "committed C aborted A records R incarnations I"
 * on stdout and exits 0 (1 on a setup error).
 *
 * Rebalances come through a rebalance callback, so they happen inside rd_kafka_consumer_poll
 * and nowhere else: a batch whose collection saw one is dropped and the consumer rewound to the
 * group's committed offsets, and the group metadata sent with the offsets is the one read when
 * the batch was complete. Without that (librdkafka assigning on its own thread) a batch polled
 * before a rebalance was committed with the new generation's metadata, and the position the
 * new assignment fetched — from before that commit — delivered the batch again (a clean-clone
 * CI run, 3 December 2026: 50 records committed twice).
 */
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH_MAX 50

static volatile sig_atomic_t stop;
static int rebalanced; /* set by on_rebalance, inside rd_kafka_consumer_poll */
static const char *bootstrap, *src, *dst, *group, *tid;
static unsigned long committed, aborted, records, incarnations;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static int set(rd_kafka_conf_t *c, const char *k, const char *v)
{
    char err[256];
    if (rd_kafka_conf_set(c, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "rdk_eos: %s=%s: %s\n", k, v, err);
        return -1;
    }
    return 0;
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    (void)opaque;
    rd_kafka_resp_err_t e = rd_kafka_assign(
        rk, err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS ? parts : NULL); /* eager: revoke all */
    if (e)
        fprintf(stderr, "rdk_eos %s: assign: %s\n", tid, rd_kafka_err2str(e));
    rebalanced = 1;
}

static rd_kafka_t *make(rd_kafka_type_t type)
{
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    char err[256];
    int bad = set(c, "bootstrap.servers", bootstrap) ||
              set(c, "topic.metadata.refresh.interval.ms", "1000") ||
              set(c, "reconnect.backoff.max.ms", "500");
    if (type == RD_KAFKA_CONSUMER)
        bad = bad || set(c, "group.id", group) || set(c, "isolation.level", "read_committed") ||
              set(c, "enable.auto.commit", "false") || set(c, "auto.offset.reset", "earliest") ||
              set(c, "session.timeout.ms", "6000") || set(c, "heartbeat.interval.ms", "1000");
    else
        bad = bad || set(c, "transactional.id", tid) || set(c, "transaction.timeout.ms", "20000") ||
              set(c, "linger.ms", "5") || set(c, "request.timeout.ms", "5000");
    if (bad) {
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    if (type == RD_KAFKA_CONSUMER)
        rd_kafka_conf_set_rebalance_cb(c, on_rebalance);
    rd_kafka_t *rk = rd_kafka_new(type, c, err, sizeof(err));
    if (!rk)
        fprintf(stderr, "rdk_eos: rd_kafka_new: %s\n", err);
    return rk;
}

/* EW1: back to the group's committed offsets, so the aborted batch is processed again. */
static void rewind_to_committed(rd_kafka_t *c)
{
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (rd_kafka_assignment(c, &parts) || !parts)
        return;
    if (parts->cnt && !rd_kafka_committed(c, parts, 30000)) {
        for (int i = 0; i < parts->cnt; i++)
            if (parts->elems[i].offset < 0)
                parts->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_error_t *e = rd_kafka_seek_partitions(c, parts, 30000);
        if (e)
            rd_kafka_error_destroy(e);
    }
    rd_kafka_topic_partition_list_destroy(parts);
}

/* One transaction over msgs, polled under the group metadata meta; 0 committed, 1 aborted
 * (and rewound), -1 fatal. */
static int transact(rd_kafka_t *p, rd_kafka_t *c, rd_kafka_message_t **msgs, int n,
                    const rd_kafka_consumer_group_metadata_t *meta)
{
    rd_kafka_error_t *e = rd_kafka_begin_transaction(p);
    rd_kafka_topic_partition_list_t *offs = rd_kafka_topic_partition_list_new(n);
    for (int i = 0; !e && i < n; i++) {
        rd_kafka_message_t *m = msgs[i];
        char out[512];
        int len = snprintf(out, sizeof(out), "o-%.*s", (int)m->len, (const char *)m->payload);
        rd_kafka_resp_err_t pe;
        while ((pe = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(dst), RD_KAFKA_V_PARTITION(m->partition),
                                       RD_KAFKA_V_VALUE(out, (size_t)len),
                                       RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) ==
               RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(p, 10);
        if (pe)
            e = rd_kafka_error_new(pe, "produce: %s", rd_kafka_err2str(pe));
        rd_kafka_topic_partition_t *tp =
            rd_kafka_topic_partition_list_find(offs, src, m->partition);
        if (!tp)
            tp = rd_kafka_topic_partition_list_add(offs, src, m->partition);
        tp->offset = m->offset + 1;
    }
    if (!e)
        e = rd_kafka_send_offsets_to_transaction(p, offs, meta, 30000);
    rd_kafka_topic_partition_list_destroy(offs);
    for (int attempt = 0; !e; attempt++) {
        e = rd_kafka_commit_transaction(p, 30000);
        if (!e) {
            committed++;
            records += (unsigned long)n;
            return 0;
        }
        if (attempt < 9 && rd_kafka_error_is_retriable(e) &&
            !rd_kafka_error_txn_requires_abort(e)) {
            rd_kafka_error_destroy(e); /* EW1: a retriable commit error: commit again */
            e = NULL;
            usleep(500000);
        }
    }
    fprintf(stderr, "rdk_eos %s: %s\n", tid, rd_kafka_error_string(e));
    int fatal = !rd_kafka_error_txn_requires_abort(e);
    rd_kafka_error_destroy(e);
    if (fatal)
        return -1;
    e = rd_kafka_abort_transaction(p, 30000);
    if (e) {
        fprintf(stderr, "rdk_eos %s: abort: %s\n", tid, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return -1;
    }
    aborted++;
    rewind_to_committed(c);
    return 1;
}

/* One incarnation: until stop (0) or a fatal error (-1). */
static int session(void)
{
    rd_kafka_t *c = make(RD_KAFKA_CONSUMER), *p = make(RD_KAFKA_PRODUCER);
    int rc = -1;
    if (!c || !p)
        goto out;
    rd_kafka_error_t *e = rd_kafka_init_transactions(p, 60000);
    if (e) {
        fprintf(stderr, "rdk_eos %s: init: %s\n", tid, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        goto out;
    }
    rd_kafka_poll_set_consumer(c);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, src, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t se = rd_kafka_subscribe(c, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (se) {
        fprintf(stderr, "rdk_eos: subscribe: %s\n", rd_kafka_err2str(se));
        goto out;
    }
    rd_kafka_message_t *msgs[BATCH_MAX];
    rc = 0;
    while (!stop && rc == 0) {
        int n = 0;
        rebalanced = 0;
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 500);
        while (m) {
            if (m->err)
                rd_kafka_message_destroy(m);
            else
                msgs[n++] = m;
            m = n < BATCH_MAX ? rd_kafka_consumer_poll(c, 0) : NULL;
        }
        if (rebalanced) { /* the batch may straddle an assignment: drop it, start again */
            for (int i = 0; i < n; i++)
                rd_kafka_message_destroy(msgs[i]);
            n = 0;
            rewind_to_committed(c);
        }
        if (n) {
            rd_kafka_consumer_group_metadata_t *meta = rd_kafka_consumer_group_metadata(c);
            rc = transact(p, c, msgs, n, meta) < 0 ? -1 : 0;
            rd_kafka_consumer_group_metadata_destroy(meta);
        }
        for (int i = 0; i < n; i++)
            rd_kafka_message_destroy(msgs[i]);
        rd_kafka_poll(p, 0);
        usleep(50000);
    }
out:
    if (c) {
        rd_kafka_consumer_close(c);
        rd_kafka_destroy(c);
    }
    if (p)
        rd_kafka_destroy(p);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: rdk_eos BOOTSTRAP SRC DST GROUP TRANSACTIONAL_ID\n");
        return 1;
    }
    bootstrap = argv[1], src = argv[2], dst = argv[3], group = argv[4], tid = argv[5];
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    while (!stop) {
        if (session() < 0 && !stop) {
            incarnations++;
            sleep(1);
        }
    }
    printf("committed %lu aborted %lu records %lu incarnations %lu\n", committed, aborted, records,
           incarnations);
    return 0;
}
