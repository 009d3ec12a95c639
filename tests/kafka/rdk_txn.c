/*
 * rdk_txn.c — librdkafka's transactional producer against `ringtail serve`, for
 * tests/cli_kafka_txn.sh. It only drives the client and reports what the client said; the
 * driver checks what consumers read.
 *
 *   rdk_txn BROKER TOPIC run N     N transactions of 10 records each over the topic's 3
 *                                  partitions (record j of transaction i to partition
 *                                  (i + j) % 3, value "t<i>-r<j>"); every third (i % 3 == 2)
 *                                  aborted, the others committed, each after its records were
 *                                  delivered (so aborted records are in the log). Prints each
 *                                  committed value
 *                                  on stdout, then "committed C aborted A" on stderr.
 *   rdk_txn BROKER TOPIC fence     producer A (transactional.id "fence") begins and sends; a
 *                                  second producer B with the same id initialises; A's commit
 *                                  must fail as fenced. B then commits one record "b". Prints
 *                                  "A fenced: <error name>" and "B committed".
 *   rdk_txn BROKER TOPIC hang MS   transactional.id "hang" with transaction.timeout.ms MS:
 *                                  begins, sends "h0".."h4" to partition 0, waits for their
 *                                  delivery, prints "open" and then sleeps without ending the
 *                                  transaction (the driver kills it; the broker's timeout must
 *                                  abort it).
 *   rdk_txn BROKER TOPIC offsets   transactional.id "off": 6 transactions, each one record and
 *                                  send_offsets_to_transaction(group "g", TOPIC-0 at 10 * (i+1));
 *                                  i % 3 == 2 aborted. Then a consumer of group "g" asks the
 *                                  committed offset of TOPIC-0 (OffsetFetch) and prints
 *                                  "committed offset N".
 *   rdk_txn BROKER TOPIC committed just that last question.
 *   rdk_txn BROKER TOPIC loop N    transactional.id "loop": N small transactions (records
 *                                  "L<i>-0".."L<i>-2", one per partition), as an application
 *                                  would run them through broker restarts: a retriable error
 *                                  retries the commit, an abortable one aborts and runs the
 *                                  transaction again. Prints "acked L<i>" once each commit
 *                                  returned success; exits 3 on a fatal error (printed).
 * Exit 0 on success, 1 with the client's error on stderr otherwise. It must never be taken
 * for the broker's check: it asserts only the client's answers.
 */
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rd_kafka_t *producer_with(const char *broker, const char *txn_id, const char *timeout_ms)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", broker, err, sizeof err) ||
        rd_kafka_conf_set(conf, "transactional.id", txn_id, err, sizeof err) ||
        rd_kafka_conf_set(conf, "transaction.timeout.ms", timeout_ms, err, sizeof err) ||
        rd_kafka_conf_set(conf, "linger.ms", "5", err, sizeof err)) {
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

static rd_kafka_t *producer(const char *broker, const char *txn_id)
{
    return producer_with(broker, txn_id, "30000");
}

static void must(rd_kafka_error_t *e, const char *what)
{
    if (!e)
        return;
    fprintf(stderr, "%s: %s (%s)%s\n", what, rd_kafka_error_string(e), rd_kafka_error_name(e),
            rd_kafka_error_is_fatal(e) ? " fatal" : "");
    exit(1);
}

static void send_one(rd_kafka_t *rk, const char *topic, int32_t partition, const char *value)
{
    rd_kafka_resp_err_t err =
        rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                          RD_KAFKA_V_VALUE((void *)value, strlen(value)),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (err) {
        fprintf(stderr, "produce: %s\n", rd_kafka_err2str(err));
        exit(1);
    }
}

static int run(const char *broker, const char *topic, int n)
{
    rd_kafka_t *rk = producer(broker, "rdk-run");
    must(rd_kafka_init_transactions(rk, 30000), "init_transactions");
    int committed = 0, aborted = 0;
    for (int i = 0; i < n; i++) {
        must(rd_kafka_begin_transaction(rk), "begin_transaction");
        char values[10][32];
        for (int j = 0; j < 10; j++) {
            snprintf(values[j], sizeof values[j], "t%d-r%d", i, j);
            send_one(rk, topic, (i + j) % 3, values[j]);
        }
        /* Delivered before the end, so an aborted transaction's records are in the log (an
         * abort with records still queued would drop them in the client, unsent). */
        if (rd_kafka_flush(rk, 30000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
            fprintf(stderr, "flush: timed out\n");
            return 1;
        }
        if (i % 3 == 2) {
            must(rd_kafka_abort_transaction(rk, 30000), "abort_transaction");
            aborted++;
        } else {
            must(rd_kafka_commit_transaction(rk, 30000), "commit_transaction");
            for (int j = 0; j < 10; j++)
                printf("%s\n", values[j]);
            committed++;
        }
    }
    fflush(stdout);
    fprintf(stderr, "committed %d aborted %d\n", committed, aborted);
    rd_kafka_destroy(rk);
    return 0;
}

static int fence(const char *broker, const char *topic)
{
    rd_kafka_t *a = producer(broker, "fence");
    must(rd_kafka_init_transactions(a, 30000), "A init_transactions");
    must(rd_kafka_begin_transaction(a), "A begin_transaction");
    send_one(a, topic, 0, "a");
    rd_kafka_flush(a, 10000);
    rd_kafka_t *b = producer(broker, "fence");
    must(rd_kafka_init_transactions(b, 30000), "B init_transactions");
    rd_kafka_error_t *e = rd_kafka_commit_transaction(a, 30000);
    if (!e) {
        fprintf(stderr, "A's commit succeeded after B initialised: not fenced\n");
        return 1;
    }
    printf("A fenced: %s%s\n", rd_kafka_error_name(e), rd_kafka_error_is_fatal(e) ? " fatal" : "");
    rd_kafka_error_destroy(e);
    must(rd_kafka_begin_transaction(b), "B begin_transaction");
    send_one(b, topic, 0, "b");
    must(rd_kafka_commit_transaction(b, 30000), "B commit_transaction");
    printf("B committed\n");
    fflush(stdout);
    rd_kafka_destroy(a);
    rd_kafka_destroy(b);
    return 0;
}

static int hang(const char *broker, const char *topic, const char *timeout_ms)
{
    rd_kafka_t *rk = producer_with(broker, "hang", timeout_ms);
    must(rd_kafka_init_transactions(rk, 30000), "init_transactions");
    must(rd_kafka_begin_transaction(rk), "begin_transaction");
    for (int i = 0; i < 5; i++) {
        char v[16];
        snprintf(v, sizeof v, "h%d", i);
        send_one(rk, topic, 0, v);
    }
    if (rd_kafka_flush(rk, 30000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "flush: timed out\n");
        return 1;
    }
    printf("open\n");
    fflush(stdout);
    for (;;)
        rd_kafka_poll(rk, 1000); /* never ends the transaction */
}

static int committed(const char *broker, const char *topic);

static int offsets(const char *broker, const char *topic)
{
    rd_kafka_t *rk = producer(broker, "off");
    must(rd_kafka_init_transactions(rk, 30000), "init_transactions");
    rd_kafka_consumer_group_metadata_t *cgmd = rd_kafka_consumer_group_metadata_new("g");
    for (int i = 0; i < 6; i++) {
        must(rd_kafka_begin_transaction(rk), "begin_transaction");
        char v[16];
        snprintf(v, sizeof v, "o%d", i);
        send_one(rk, topic, 1, v);
        rd_kafka_topic_partition_list_t *offs = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(offs, topic, 0)->offset = 10 * (i + 1);
        must(rd_kafka_send_offsets_to_transaction(rk, offs, cgmd, 30000),
             "send_offsets_to_transaction");
        rd_kafka_topic_partition_list_destroy(offs);
        if (i % 3 == 2)
            must(rd_kafka_abort_transaction(rk, 30000), "abort_transaction");
        else
            must(rd_kafka_commit_transaction(rk, 30000), "commit_transaction");
    }
    rd_kafka_consumer_group_metadata_destroy(cgmd);
    rd_kafka_destroy(rk);
    return committed(broker, topic);
}

/* The committed offset of group "g" for TOPIC-0, as a consumer asks it (OffsetFetch). */
static int committed(const char *broker, const char *topic)
{

    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", broker, err, sizeof err) ||
        rd_kafka_conf_set(conf, "group.id", "g", err, sizeof err)) {
        fprintf(stderr, "conf: %s\n", err);
        return 1;
    }
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!c) {
        fprintf(stderr, "rd_kafka_new: %s\n", err);
        return 1;
    }
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic, 0);
    rd_kafka_resp_err_t e = rd_kafka_committed(c, parts, 30000);
    if (e || parts->elems[0].err) {
        fprintf(stderr, "committed: %s\n", rd_kafka_err2str(e ? e : parts->elems[0].err));
        return 1;
    }
    printf("committed offset %" PRId64 "\n", parts->elems[0].offset);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_destroy(c);
    return 0;
}

/* Handles a failed transactional call in loop(): 1 retry the commit, 2 abort and run the
 * transaction again; exits on a fatal error. */
static int failure(rd_kafka_error_t *e, const char *what)
{
    int verdict = rd_kafka_error_is_retriable(e) ? 1 : 2;
    fprintf(stderr, "%s: %s (%s)%s%s\n", what, rd_kafka_error_string(e), rd_kafka_error_name(e),
            rd_kafka_error_is_fatal(e) ? " fatal" : "",
            rd_kafka_error_txn_requires_abort(e) ? " abortable" : "");
    if (rd_kafka_error_is_fatal(e)) {
        rd_kafka_error_destroy(e);
        exit(3);
    }
    if (rd_kafka_error_txn_requires_abort(e))
        verdict = 2;
    rd_kafka_error_destroy(e);
    return verdict;
}

static int loop(const char *broker, const char *topic, int n)
{
    rd_kafka_t *rk = producer(broker, "loop");
    rd_kafka_error_t *e;
    while ((e = rd_kafka_init_transactions(rk, 10000)) != NULL)
        if (failure(e, "init_transactions") == 2)
            exit(3);
    for (int i = 0; i < n;) {
        must(rd_kafka_begin_transaction(rk), "begin_transaction");
        for (int j = 0; j < 3; j++) {
            char v[32];
            snprintf(v, sizeof v, "L%d-%d", i, j);
            send_one(rk, topic, j, v);
        }
        int verdict = 0;
        while ((e = rd_kafka_commit_transaction(rk, 10000)) != NULL) {
            verdict = failure(e, "commit_transaction");
            if (verdict == 2)
                break;
        }
        if (verdict == 2) {
            while ((e = rd_kafka_abort_transaction(rk, 10000)) != NULL)
                if (failure(e, "abort_transaction") == 2)
                    exit(3);
            continue; /* the same i again: it was not committed */
        }
        printf("acked L%d\n", i);
        fflush(stdout);
        i++;
    }
    rd_kafka_destroy(rk);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[3], "run") == 0)
        return run(argv[1], argv[2], atoi(argv[4]));
    if (argc >= 5 && strcmp(argv[3], "hang") == 0)
        return hang(argv[1], argv[2], argv[4]);
    if (argc >= 5 && strcmp(argv[3], "loop") == 0)
        return loop(argv[1], argv[2], atoi(argv[4]));
    if (argc >= 4 && strcmp(argv[3], "committed") == 0)
        return committed(argv[1], argv[2]);
    if (argc >= 4 && strcmp(argv[3], "offsets") == 0)
        return offsets(argv[1], argv[2]);
    if (argc >= 4 && strcmp(argv[3], "fence") == 0)
        return fence(argv[1], argv[2]);
    fprintf(stderr,
            "usage: rdk_txn BROKER TOPIC run N | fence | hang MS | offsets | committed | loop N\n");
    return 2;
}
