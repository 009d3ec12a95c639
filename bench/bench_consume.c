/*
 * bench_consume.c — the consume workload (`--only consume`, issue 27 item 5): what bounds a
 * read_committed consumer of `ringtail serve` over loopback, the broker's serving limit apart
 * from one client's.
 *
 *   fill:      the log is written in this process (rt_append, sync none, 128-record batches of
 *              1 KiB values, round robin over the partitions; after every 16th batch an aborted
 *              transaction of 16 records on that partition) before the server starts, so the
 *              consume rows measure reading only, and read_committed has aborted transactions
 *              to list and drop; every consumer must read exactly the committed records.
 *   rdkafka:   N librdkafka consumers (threads, one rd_kafka_t and connection each),
 *              isolation.level=read_committed, consumer i assigned partitions p with
 *              p mod N == i from offset 0 (a group's split, without the group protocol),
 *              each reading its partitions to their ends; MB/s of values from the common start
 *              to the last consumer's end.
 *   fetch:     N thin Fetch clients (threads, one blocking TCP connection each): Fetch v11,
 *              read_committed, the same partition split, one request in flight, the response
 *              read whole into user space and decoded by kmsg_fetch_response_decode, only the
 *              batch headers walked (the next fetch offset, the committed records counted): a consumer
 *              doing the least a consumer can, so what it measures is the broker and the
 *              loopback, not the client.
 *   limit:     the same bytes over 127.0.0.1 by plain send/recv (1 MiB calls) and by sendfile
 *              from a page-cached file (no sender copy), over 1 and 4 streams (a sender and a
 *              receiver thread each); the best of them is the limit. The senders' thread CPU is
 *              reported: on loopback it includes the receive path's softirq work, so it is the
 *              floor any sender (the broker included) pays per GB here.
 *
 * It owns its threads, sockets and the limit's scratch file, nothing else (the server process
 * is bench_serve.c's); it never asserts a figure (bench_main.c prints ratios and targets).
 * The thin client's walk over batch headers (consume_walk.h, fuzzed by
 * fuzz/fuzz_kafka_consume_walk.c) bounds every read by the decoded records' length, and the
 * response itself is decoded by the broker's own fuzzed codec (fuzz_kafka_data).
 */
#include "bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/kmsg.h"

#include "bench/consume_walk.h"

#define CONSUME_BATCH_RECORDS 128
#define CONSUME_ABORT_EVERY   16 /* batches between two aborted transactions */
#define CONSUME_ABORT_RECORDS 16 /* records in each */
#define CONSUME_IDLE_NS       (30ull * 1000000000ull)

/* ---- fill ------------------------------------------------------------------------------- */

int consume_fill(const char *dir, const char *topic, uint32_t partitions, uint64_t bytes,
                 uint64_t *records, char *err, size_t errlen)
{
    struct rt_options o;
    rt_options_init(&o);
    o.sync_mode = RT_SYNC_NONE;
    rt_engine *e = NULL;
    rt_producer *txp = NULL;
    int rc = rt_open(dir, &o, &e);
    const char *what = "rt_open";
    if (rc == 0) {
        what = "rt_topic_create";
        rc = rt_topic_create(e, topic, partitions);
    }
    if (rc == 0) { /* the producer of the aborted transactions */
        struct rt_producer_options po;
        rt_producer_options_init(&po);
        po.transactional_id = "bench-consume-abort";
        what = "rt_producer_open";
        rc = rt_producer_open(e, &po, &txp);
        if (rc == 0) {
            what = "rt_producer_init_transactions";
            rc = rt_producer_init_transactions(txp, -1);
        }
    }
    struct rt_record recs[CONSUME_BATCH_RECORDS];
    uint64_t batches = bytes / ((uint64_t)CONSUME_BATCH_RECORDS * BENCH_VALUE_BYTES);
    if (batches < partitions)
        batches = partitions;
    for (uint32_t p = 0; p < partitions; p++)
        records[p] = 0;
    for (uint64_t b = 0; rc == 0 && b < batches; b++) {
        uint32_t p = (uint32_t)(b % partitions);
        bench_records_make(recs, CONSUME_BATCH_RECORDS, BENCH_VALUE_BYTES, b);
        what = "rt_append";
        rc = rt_append(e, topic, p, recs, CONSUME_BATCH_RECORDS, NULL);
        records[p] += CONSUME_BATCH_RECORDS;
        progress_add((uint64_t)CONSUME_BATCH_RECORDS * BENCH_VALUE_BYTES);
        if (rc == 0 && b % CONSUME_ABORT_EVERY == CONSUME_ABORT_EVERY - 1) {
            /* An aborted transaction of CONSUME_ABORT_RECORDS records and its marker: what a
             * read_committed fetch must list (KF3) and its consumer must drop. */
            what = "rt_producer_begin";
            rc = rt_producer_begin(txp);
            for (uint32_t i = 0; rc == 0 && i < CONSUME_ABORT_RECORDS; i++) {
                struct rt_producer_message m = {.record = recs[i], .sequence = -1};
                what = "rt_producer_send";
                rc = rt_producer_send(txp, topic, (int32_t)p, &m, NULL, NULL);
            }
            if (rc == 0) {
                what = "rt_producer_abort";
                rc = rt_producer_abort(txp, -1);
            }
        }
    }
    if (rc)
        snprintf(err, errlen, "filling %s: %s: %s", topic, what, rt_error_detail());
    if (txp) {
        int rc2 = rt_producer_close(txp);
        rc = rc ? rc : rc2;
    }
    if (e) {
        int rc2 = rt_close(e);
        rc = rc ? rc : rc2;
    }
    return rc;
}

/* ---- one consumer's share and the common clock ------------------------------------------- */

struct consumer {
    const struct consume_args *args;
    uint32_t id;
    pthread_t thread;
    uint64_t records, bytes, sum, end_ns;
    int rc;
    char errmsg[200];
    _Atomic uint32_t *ready;
    _Atomic bool *go;
};

static bool mine(const struct consumer *c, uint32_t p)
{
    return p % c->args->consumers == c->id;
}

static uint64_t share_records(const struct consumer *c)
{
    uint64_t n = 0;
    for (uint32_t p = 0; p < c->args->partitions; p++)
        if (mine(c, p))
            n += c->args->records[p];
    return n;
}

static void ready_and_wait(struct consumer *c)
{
    atomic_fetch_add(c->ready, 1);
    while (!atomic_load_explicit(c->go, memory_order_acquire))
        sched_yield();
}

/* ---- librdkafka consumers ------------------------------------------------------------------ */

static int rk_set(rd_kafka_conf_t *c, const char *k, const char *v, char *err, size_t n)
{
    return rd_kafka_conf_set(c, k, v, err, n) == RD_KAFKA_CONF_OK ? 0 : -EINVAL;
}

/* "k=v,k=v" applied on top (RTB_RDKAFKA_CONF: the client settings explored in docs/bench.md). */
static int rk_set_list(rd_kafka_conf_t *c, const char *list, char *err, size_t n)
{
    if (!list || !list[0])
        return 0; /* librdkafka's defaults */
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", list ? list : "");
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return -EINVAL;
        *eq = 0;
        if (rk_set(c, kv, eq + 1, err, n))
            return -EINVAL;
    }
    return 0;
}

static void *rk_consumer_main(void *arg)
{
    struct consumer *c = arg;
    const struct consume_args *a = c->args;
    char err[256] = "";
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rk_set(conf, "bootstrap.servers", a->broker, err, sizeof(err)) ||
        rk_set(conf, "group.id", "ringtail-bench-consume", err, sizeof(err)) ||
        rk_set(conf, "isolation.level", "read_committed", err, sizeof(err)) ||
        rk_set(conf, "enable.auto.commit", "false", err, sizeof(err)) ||
        rk_set(conf, "fetch.wait.max.ms", "100", err, sizeof(err)) ||
        rk_set_list(conf, a->rdkafka_conf, err, sizeof(err))) {
        snprintf(c->errmsg, sizeof(c->errmsg), "conf: %s", err[0] ? err : a->rdkafka_conf);
        rd_kafka_conf_destroy(conf);
        c->rc = -EINVAL;
        ready_and_wait(c);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (!rk) {
        snprintf(c->errmsg, sizeof(c->errmsg), "rd_kafka_new: %s", err);
        c->rc = -EINVAL;
        ready_and_wait(c);
        return NULL;
    }
    rd_kafka_poll_set_consumer(rk);
    const struct rd_kafka_metadata *md = NULL;
    if (rd_kafka_metadata(rk, 0, NULL, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(8);
    for (uint32_t p = 0; p < a->partitions; p++)
        if (mine(c, p))
            rd_kafka_topic_partition_list_add(parts, a->topic, (int32_t)p)->offset = 0;
    uint64_t want = share_records(c);
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    enum { BATCH = 4096 };
    rd_kafka_message_t **msgs = calloc(BATCH, sizeof(*msgs));
    ready_and_wait(c);
    if (!q || !msgs) {
        c->rc = -ENOMEM;
    } else if (rd_kafka_assign(rk, parts) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        snprintf(c->errmsg, sizeof(c->errmsg), "assign failed");
        c->rc = -EIO;
    }
    uint64_t idle_since = bench_now_ns();
    while (c->rc == 0 && c->records < want) {
        ssize_t n = rd_kafka_consume_batch_queue(q, 100, msgs, BATCH);
        uint64_t now = bench_now_ns();
        if (n <= 0) {
            if (now - idle_since > CONSUME_IDLE_NS) {
                snprintf(c->errmsg, sizeof(c->errmsg),
                         "nothing for 30 s after %" PRIu64 " of %" PRIu64 " records", c->records,
                         want);
                c->rc = -ETIMEDOUT;
            }
            continue;
        }
        idle_since = now;
        uint64_t got = 0;
        for (ssize_t i = 0; i < n; i++) {
            rd_kafka_message_t *m = msgs[i];
            if (m->err) {
                if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF && c->rc == 0) {
                    snprintf(c->errmsg, sizeof(c->errmsg), "consume: %s",
                             rd_kafka_message_errstr(m));
                    c->rc = -EIO;
                }
            } else {
                c->records++;
                c->bytes += m->len;
                got += m->len;
                if (m->len >= 8) {
                    uint64_t v;
                    memcpy(&v, m->payload, sizeof(v)); /* read the value, as a consumer would */
                    c->sum += v;
                }
            }
            rd_kafka_message_destroy(m);
        }
        progress_add(got);
    }
    c->end_ns = bench_now_ns();
    free(msgs);
    if (q)
        rd_kafka_queue_destroy(q);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return NULL;
}

/* ---- thin Fetch clients ------------------------------------------------------------------ */

static int dial_broker(const char *broker)
{
    char host[64];
    snprintf(host, sizeof(host), "%s", broker);
    char *colon = strrchr(host, ':');
    if (!colon)
        return -EINVAL;
    *colon = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return -EINVAL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

static int send_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EPIPE;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int recv_all(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t r = recv(fd, p, n, MSG_WAITALL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : -EPIPE;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int fetch_encode(struct kp_writer *w, int32_t corr, const struct kmsg_fetch_request *q)
{
    size_t at = kafka_frame_begin(w);
    kp_write_i16(w, KAFKA_FETCH);
    kp_write_i16(w, 11);
    kp_write_i32(w, corr);
    kp_write_string(w, kp_str_of("rt-bench"));
    int rc = kmsg_fetch_request_encode(w, 11, q);
    return rc ? rc : kafka_frame_end(w, at);
}

static void *fetch_client_main(void *arg)
{
    struct consumer *c = arg;
    const struct consume_args *a = c->args;
    int fd = dial_broker(a->broker);
    uint32_t np = 0;
    struct kmsg_fetch_partition parts[64];
    for (uint32_t p = 0; p < a->partitions && np < 64; p++)
        if (mine(c, p))
            parts[np++] = (struct kmsg_fetch_partition){.partition = (int32_t)p,
                                                        .current_leader_epoch = -1,
                                                        .fetch_offset = 0,
                                                        .log_start_offset = -1,
                                                        .partition_max_bytes = a->fetch_bytes,
                                                        .last_fetched_epoch = -1};
    struct kmsg_fetch_topic topic = {
        .topic = kp_str_of(a->topic), .partitions = parts, .partitions_count = (int32_t)np};
    struct kmsg_fetch_request q = {.replica_id = -1,
                                   .max_wait_ms = 100,
                                   .min_bytes = 1,
                                   .max_bytes = a->fetch_bytes,
                                   .isolation_level = 1,
                                   .session_id = 0,
                                   .session_epoch = -1,
                                   .topics = &topic,
                                   .topics_count = 1};
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    static _Thread_local uint8_t arena_buf[64 << 10];
    struct kp_arena arena;
    size_t cap = 0;
    uint8_t *buf = NULL;
    uint64_t want = share_records(c), idle_since = 0;
    ready_and_wait(c);
    if (fd < 0) {
        c->rc = fd;
        snprintf(c->errmsg, sizeof(c->errmsg), "connect %s: %s", a->broker, strerror(-fd));
    }
    idle_since = bench_now_ns();
    for (int32_t corr = 1; c->rc == 0 && c->records < want; corr++) {
        kp_writer_reset(&w, NULL, 0);
        int rc = fetch_encode(&w, corr, &q);
        uint8_t size_be[4];
        if (!rc)
            rc = send_all(fd, w.buf, w.len);
        if (!rc)
            rc = recv_all(fd, size_be, 4);
        size_t len = rc ? 0 : kp_load_be32(size_be);
        if (!rc && len > cap) {
            uint8_t *nb = realloc(buf, len);
            rc = nb ? 0 : -ENOMEM;
            if (nb) {
                buf = nb;
                cap = len;
            }
        }
        if (!rc)
            rc = recv_all(fd, buf, len);
        struct kmsg_fetch_response r = {0};
        if (!rc && (len < 4 || (int32_t)kp_load_be32(buf) != corr))
            rc = -EPROTO;
        if (!rc) {
            struct kp_reader rd;
            kp_reader_init(&rd, buf + 4, len - 4);
            kp_arena_init(&arena, arena_buf, sizeof(arena_buf));
            rc = kmsg_fetch_response_decode(&rd, 11, &arena, &r) ? -EPROTO : 0;
        }
        if (rc) {
            c->rc = rc;
            snprintf(c->errmsg, sizeof(c->errmsg), "fetch %d: %s", corr, strerror(-rc));
            break;
        }
        uint64_t before = c->records;
        for (int32_t t = 0; t < r.responses_count; t++)
            for (int32_t i = 0; i < r.responses[t].partitions_count; i++) {
                const struct kmsg_fetch_partition_response *pr = &r.responses[t].partitions[i];
                if (pr->error_code) {
                    c->rc = -EIO;
                    snprintf(c->errmsg, sizeof(c->errmsg), "partition %d: error %d",
                             pr->partition_index, pr->error_code);
                    continue;
                }
                for (uint32_t k = 0; k < np; k++)
                    if (parts[k].partition == pr->partition_index && pr->records_len > 0)
                        consume_walk_batches(pr->records, (size_t)pr->records_len,
                                             pr->aborted_transactions,
                                             pr->aborted_transactions_count, &parts[k].fetch_offset,
                                             &c->records, &c->sum);
            }
        uint64_t now = bench_now_ns();
        if (c->records > before) {
            idle_since = now;
            progress_add((c->records - before) * BENCH_VALUE_BYTES);
        } else if (now - idle_since > CONSUME_IDLE_NS) {
            c->rc = -ETIMEDOUT;
            snprintf(c->errmsg, sizeof(c->errmsg),
                     "nothing for 30 s after %" PRIu64 " of %" PRIu64 " records", c->records, want);
        }
    }
    c->end_ns = bench_now_ns();
    c->bytes = c->records * BENCH_VALUE_BYTES; /* the values' bytes, as librdkafka's m->len */
    free(buf);
    kp_writer_free(&w);
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* ---- the run ------------------------------------------------------------------------------ */

int consume_run(const struct consume_args *a, struct serve_result *out)
{
    memset(out, 0, sizeof(*out));
    struct consumer *cs = calloc(a->consumers, sizeof(*cs));
    if (!cs)
        return -ENOMEM;
    _Atomic uint32_t ready = 0;
    _Atomic bool go = false;
    uint32_t started = 0;
    int rc = 0;
    for (; started < a->consumers; started++) {
        cs[started] = (struct consumer){.args = a, .id = started, .ready = &ready, .go = &go};
        if (pthread_create(&cs[started].thread, NULL,
                           a->thin ? fetch_client_main : rk_consumer_main, &cs[started]) != 0) {
            rc = -EAGAIN;
            break;
        }
    }
    while (atomic_load(&ready) < started)
        sched_yield();
    uint64_t t0 = bench_now_ns(), end = t0;
    atomic_store_explicit(&go, true, memory_order_release);
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(cs[i].thread, NULL);
        out->records += cs[i].records;
        out->bytes += cs[i].bytes;
        out->checksum += cs[i].sum;
        if (cs[i].end_ns > end)
            end = cs[i].end_ns;
        if (cs[i].rc && !rc) {
            rc = cs[i].rc;
            snprintf(out->errmsg, sizeof(out->errmsg), "consumer %u: %s", i, cs[i].errmsg);
        } else if (!rc && cs[i].records != share_records(&cs[i])) { /* aborted records read */
            rc = -EIO;
            snprintf(out->errmsg, sizeof(out->errmsg),
                     "consumer %u read %" PRIu64 " records, not the %" PRIu64 " committed", i,
                     cs[i].records, share_records(&cs[i]));
        }
    }
    out->seconds = (double)(end - t0) / 1e9;
    free(cs);
    return rc;
}

/* ---- the loopback limit: send/recv or sendfile, 1 or more streams --------------------------- */

struct lb_stream {
    int fd_send, fd_recv, file;
    uint64_t file_bytes, bytes, received, sum;
    bool use_sendfile;
    double sender_cpu_s;
    int rc;
    pthread_t tx, rx;
};

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *lb_rx(void *arg)
{
    struct lb_stream *s = arg;
    size_t cap = 1u << 20;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        s->rc = -ENOMEM;
        return NULL;
    }
    for (;;) {
        ssize_t n = recv(s->fd_recv, buf, cap, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                s->rc = -errno;
            break;
        }
        s->received += (uint64_t)n;
        s->sum += buf[0]; /* the bytes arrive in user space, as a client's would */
    }
    free(buf);
    return NULL;
}

static void *lb_tx(void *arg)
{
    struct lb_stream *s = arg;
    double c0 = thread_cpu_s();
    uint64_t sent = 0;
    while (sent < s->bytes && s->rc == 0) {
        uint64_t at = sent % s->file_bytes;
        size_t chunk = 1u << 20;
        if (chunk > s->file_bytes - at)
            chunk = (size_t)(s->file_bytes - at);
        if (chunk > s->bytes - sent)
            chunk = (size_t)(s->bytes - sent);
        ssize_t n;
        if (s->use_sendfile) {
            off_t off = (off_t)at;
            n = sendfile(s->fd_send, s->file, &off, chunk);
        } else {
            n = send(s->fd_send, bench_pool + at % (BENCH_POOL_BYTES - (1u << 20) + 1),
                     chunk < BENCH_POOL_BYTES ? chunk : BENCH_POOL_BYTES, MSG_NOSIGNAL);
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            s->rc = n < 0 ? -errno : -EIO;
        else
            sent += (uint64_t)n;
    }
    s->sender_cpu_s = thread_cpu_s() - c0;
    shutdown(s->fd_send, SHUT_WR);
    return NULL;
}

static int lb_pair(int *send_fd, int *recv_fd)
{
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    *send_fd = *recv_fd = -1;
    if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1) ||
        getsockname(ls, (struct sockaddr *)&sa, &len))
        rc = -errno;
    if (rc == 0) {
        *send_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (*send_fd < 0 || connect(*send_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
            rc = -errno;
    }
    if (rc == 0 && (*recv_fd = accept(ls, NULL, NULL)) < 0)
        rc = -errno;
    if (ls >= 0)
        close(ls);
    return rc;
}

int consume_loopback(const char *scratch, uint64_t bytes, uint32_t streams, bool use_sendfile,
                     struct serve_result *out, double *sender_cpu_s)
{
    memset(out, 0, sizeof(*out));
    *sender_cpu_s = 0;
    /* sendfile: a page-cached file of up to 256 MiB of the pool's bytes, sent again until
     * `bytes`; send: the pool itself. */
    uint64_t file_bytes = BENCH_POOL_BYTES;
    int ff = -1, rc = 0;
    if (use_sendfile) {
        file_bytes = bytes < (256u << 20) ? bytes : (256u << 20);
        ff = open(scratch, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (ff < 0)
            return -errno;
        unlink(scratch);
        for (uint64_t w = 0; w < file_bytes && rc == 0;) {
            size_t chunk = file_bytes - w < BENCH_POOL_BYTES ? (size_t)(file_bytes - w)
                                                             : (size_t)BENCH_POOL_BYTES;
            ssize_t n = pwrite(ff, bench_pool, chunk, (off_t)w);
            if (n <= 0)
                rc = n < 0 ? -errno : -EIO;
            else
                w += (uint64_t)n;
        }
    }
    struct lb_stream *ss = calloc(streams, sizeof(*ss));
    uint32_t made = 0;
    for (; rc == 0 && ss && made < streams; made++) {
        struct lb_stream *s = &ss[made];
        s->file = ff;
        s->file_bytes = file_bytes;
        s->use_sendfile = use_sendfile;
        s->bytes = bytes / streams + (made == 0 ? bytes % streams : 0);
        rc = lb_pair(&s->fd_send, &s->fd_recv);
        if (rc) {
            made++;
            break;
        }
    }
    if (!ss)
        rc = -ENOMEM;
    uint32_t running = 0;
    uint64_t t0 = bench_now_ns();
    for (; rc == 0 && running < made; running++)
        if (pthread_create(&ss[running].rx, NULL, lb_rx, &ss[running]) != 0 ||
            pthread_create(&ss[running].tx, NULL, lb_tx, &ss[running]) != 0) {
            rc = -EAGAIN; /* (a receiver without its sender ends when its socket closes) */
            shutdown(ss[running].fd_send, SHUT_RDWR);
            break;
        }
    for (uint32_t i = 0; i < running; i++) {
        pthread_join(ss[i].tx, NULL);
        pthread_join(ss[i].rx, NULL);
        out->bytes += ss[i].received;
        out->checksum += ss[i].sum;
        *sender_cpu_s += ss[i].sender_cpu_s;
        if (!rc)
            rc = ss[i].rc;
    }
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    if (!rc && out->bytes != bytes)
        rc = -EIO;
    for (uint32_t i = 0; ss && i < made; i++) {
        if (ss[i].fd_send >= 0)
            close(ss[i].fd_send);
        if (ss[i].fd_recv >= 0)
            close(ss[i].fd_recv);
    }
    free(ss);
    if (ff >= 0)
        close(ff);
    return rc;
}
