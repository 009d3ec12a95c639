/*
 * rdk_produce.c — a librdkafka (librdkafka-dev, the C library itself) idempotent producer for
 * the broker tests: sends COUNT records "0".."COUNT-1" with enable.idempotence=true and
 * acks=all, record i to partition i % PARTITIONS, and checks what the delivery reports say:
 * every record delivered once, offsets strictly increasing per partition in send order.
 * With --midway CMD it runs the shell command CMD once, when half of the records are
 * acknowledged (tests/cli_kafka_rdkafka.sh kills the broker's TCP connections with `ss -K`), so
 * the producer must reconnect and retry in-flight batches that the broker may already hold.
 *
 * It owns nothing but its own process; it never talks to anything but BROKER. Prints one line
 * "delivered N failed M disconnects D reordered R" and exits 0 only when N == COUNT and M and R
 * are 0.
 *
 * usage: rdk_produce BROKER TOPIC COUNT PARTITIONS [--midway CMD] [--value-bytes N]
 */
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#define PARTITIONS_MAX 64

struct state {
    long count;
    int partitions;
    long delivered;
    long failed;
    long disconnects;
    long reordered;
    int64_t last_offset[PARTITIONS_MAX];
    long last_index[PARTITIONS_MAX];
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct state *s = opaque;
    (void)rk;
    if (m->err) {
        if (s->failed < 5)
            fprintf(stderr, "rdk_produce: delivery failed: %s\n", rd_kafka_err2str(m->err));
        s->failed++;
        return;
    }
    long index = (long)(intptr_t)m->_private;
    int p = (int)m->partition;
    if (p < 0 || p >= s->partitions || m->offset <= s->last_offset[p] ||
        index <= s->last_index[p]) {
        if (s->reordered < 5)
            fprintf(stderr,
                    "rdk_produce: record %ld at partition %d offset %" PRId64
                    " after record %ld at offset %" PRId64 "\n",
                    index, p, (int64_t)m->offset,
                    p >= 0 && p < s->partitions ? s->last_index[p] : -1,
                    p >= 0 && p < s->partitions ? s->last_offset[p] : -1);
        s->reordered++;
    } else {
        s->last_offset[p] = m->offset;
        s->last_index[p] = index;
    }
    s->delivered++;
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    struct state *s = rd_kafka_opaque(rk);
    (void)opaque;
    if (err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
        s->disconnects++;
    fprintf(stderr, "rdk_produce: %s: %s\n", rd_kafka_err2name(err), reason);
}

static int set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
    char err[256];
    if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "rdk_produce: %s=%s: %s\n", k, v, err);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: rdk_produce BROKER TOPIC COUNT PARTITIONS [--midway CMD] "
                        "[--value-bytes N]\n");
        return 2;
    }
    const char *broker = argv[1], *topic = argv[2];
    static struct state s;
    s.count = atol(argv[3]);
    s.partitions = atoi(argv[4]);
    const char *midway = NULL;
    long value_bytes = 0;
    for (int i = 5; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--midway") == 0)
            midway = argv[i + 1];
        else if (strcmp(argv[i], "--value-bytes") == 0)
            value_bytes = atol(argv[i + 1]);
    }
    if (s.count <= 0 || s.partitions <= 0 || s.partitions > PARTITIONS_MAX || value_bytes < 0 ||
        value_bytes > (1 << 20)) {
        fprintf(stderr, "rdk_produce: bad COUNT, PARTITIONS or --value-bytes\n");
        return 2;
    }
    for (int p = 0; p < PARTITIONS_MAX; p++) {
        s.last_offset[p] = -1;
        s.last_index[p] = -1;
    }
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (set(conf, "bootstrap.servers", broker) || set(conf, "enable.idempotence", "true") ||
        set(conf, "acks", "all") || set(conf, "linger.ms", "5") ||
        set(conf, "message.timeout.ms", "120000") ||
        set(conf, "queue.buffering.max.messages", "200000"))
        return 2;
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, &s);
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!rk) {
        fprintf(stderr, "rdk_produce: %s\n", err);
        return 1;
    }
    char *pad = calloc(1, (size_t)value_bytes + 32);
    if (!pad)
        return 1;
    memset(pad, 'x', (size_t)value_bytes);
    bool midway_done = midway == NULL;
    for (long i = 0; i < s.count; i++) {
        char value[64];
        int len = snprintf(value, sizeof(value), "%ld", i);
        const char *payload = value;
        size_t size = (size_t)len;
        if (value_bytes > 0) {
            memcpy(pad, value, (size_t)len); /* the index first, then padding */
            payload = pad;
            size = (size_t)value_bytes > (size_t)len ? (size_t)value_bytes : (size_t)len;
        }
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION((int32_t)(i % s.partitions)),
                RD_KAFKA_V_VALUE((void *)payload, size), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_OPAQUE((void *)(intptr_t)i), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                break;
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                fprintf(stderr, "rdk_produce: produce: %s\n", rd_kafka_err2str(e));
                return 1;
            }
            rd_kafka_poll(rk, 10);
        }
        rd_kafka_poll(rk, 0);
        if (!midway_done && s.delivered >= s.count / 2) {
            fprintf(stderr, "rdk_produce: %ld delivered, running: %s\n", s.delivered, midway);
            if (system(midway) != 0)
                fprintf(stderr, "rdk_produce: the midway command failed\n");
            midway_done = true;
        }
    }
    while (!midway_done || rd_kafka_outq_len(rk) > 0) {
        rd_kafka_poll(rk, 50);
        if (!midway_done && s.delivered >= s.count / 2) {
            fprintf(stderr, "rdk_produce: %ld delivered, running: %s\n", s.delivered, midway);
            if (system(midway) != 0)
                fprintf(stderr, "rdk_produce: the midway command failed\n");
            midway_done = true;
        }
        if (s.delivered + s.failed >= s.count && rd_kafka_outq_len(rk) == 0)
            break;
    }
    rd_kafka_flush(rk, 60000);
    printf("delivered %ld failed %ld disconnects %ld reordered %ld\n", s.delivered, s.failed,
           s.disconnects, s.reordered);
    rd_kafka_destroy(rk);
    free(pad);
    return s.delivered == s.count && s.failed == 0 && s.reordered == 0 ? 0 : 1;
}
