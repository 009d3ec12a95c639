/*
 * bench_serve.c — the serve workload S: `ringtail serve` in its own process on a fresh data
 * directory, driven over loopback by librdkafka (librdkafka-dev), the client most Kafka
 * programs sit on, plus the loopback limit those figures are read against.
 *
 *   produce: `producers` librdkafka producers (one rd_kafka_t and one thread each, so one
 *            connection and one idempotent producer id each), enable.idempotence=true,
 *            acks=all, 1 KiB values, producer i to partition i mod partitions, each streaming
 *            as fast as the broker acknowledges for `seconds`; MB/s of acknowledged values from
 *            the common start to the last acknowledgement; latency = produce call to delivery
 *            report.
 *   consume: one librdkafka consumer at isolation.level=read_committed, assigned every
 *            partition from offset 0, reads everything produced; MB/s of values.
 *   limit:   a plain TCP transfer of the same number of bytes over 127.0.0.1 (one sender, one
 *            receiver thread, 1 MiB writes and reads): the most any loopback protocol can move.
 *   tls:     the same produce and consume against an SSL listener (--listeners SSL://...,
 *            a self-signed certificate made with the openssl CLI), clients at
 *            security.protocol=ssl: TLS beside plaintext in the same run.
 *   txn mix: 16 librdkafka transactional producers commit one-record transactions in a loop
 *            while one plain producer (acks=all, not idempotent) sends one 1 KiB record at a
 *            time and waits for each: its latency on a server started with --threads 1 (every
 *            connection on one network loop) shows whether transactional calls hold the loop.
 *   txn commit: `producers` librdkafka transactional producers, each committing small
 *            transactions (10 records of 100 B over 2 partitions) in a closed loop; the latency
 *            is that of rd_kafka_commit_transaction (issue 25 item 3: against a single node and
 *            against a cluster, bench_main.c's CL rows).
 *
 * It owns the server process it starts (killed if it does not stop on SIGTERM) and nothing
 * else; it never asserts a figure (bench_main.c prints the ratios and targets).
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#define SERVE_START_TIMEOUT_MS 20000
#define SERVE_STOP_TIMEOUT_MS  30000

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int free_port(uint16_t *out)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    int rc = 0;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        rc = -errno;
    close(fd);
    *out = ntohs(sa.sin_port);
    return rc;
}

/* ---- the server process ------------------------------------------------------------------ */

/* The TLS clients' CA (serve_client_tls); NULL: plaintext. */
static char client_ca[4200];

void serve_client_tls(const char *ca_pem)
{
    snprintf(client_ca, sizeof(client_ca), "%s", ca_pem ? ca_pem : "");
}

int serve_proc_start(struct serve_proc *sp, const char *ringtail, const char *dir,
                     const char *extra_arg)
{
    return serve_proc_start_tls(sp, ringtail, dir, extra_arg, NULL, NULL);
}

int serve_proc_start_tls(struct serve_proc *sp, const char *ringtail, const char *dir,
                         const char *extra_arg, const char *cert_pem, const char *key_pem)
{
    memset(sp, 0, sizeof(*sp));
    int rc = free_port(&sp->port);
    if (rc)
        return rc;
    snprintf(sp->broker, sizeof(sp->broker), "127.0.0.1:%u", (unsigned)sp->port);
    snprintf(sp->log_path, sizeof(sp->log_path), "%s.serve.log", dir);
    int log = open(sp->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        rc = -errno;
        close(log);
        return rc;
    }
    if (pid == 0) {
        dup2(log, 1);
        dup2(log, 2);
        if (cert_pem) { /* an SSL listener only */
            char listeners[64];
            snprintf(listeners, sizeof(listeners), "SSL://%s", sp->broker);
            execl(ringtail, "ringtail", "serve", dir, "--listeners", listeners, "--ssl-cert-pem",
                  cert_pem, "--ssl-key-pem", key_pem, (char *)NULL);
        } else if (extra_arg) { /* "--option value" */
            char opt[64];
            const char *sp_at = strchr(extra_arg, ' ');
            size_t n = sp_at ? (size_t)(sp_at - extra_arg) : strlen(extra_arg);
            snprintf(opt, sizeof(opt), "%.*s", (int)n, extra_arg);
            execl(ringtail, "ringtail", "serve", dir, "--listen", sp->broker, opt,
                  sp_at ? sp_at + 1 : "", (char *)NULL);
        } else {
            execl(ringtail, "ringtail", "serve", dir, "--listen", sp->broker, (char *)NULL);
        }
        dprintf(2, "exec %s: %s\n", ringtail, strerror(errno));
        _exit(127);
    }
    close(log);
    sp->pid = pid;
    char want[64];
    snprintf(want, sizeof(want), "listening on %s%s", cert_pem ? "SSL://" : "", sp->broker);
    for (int waited = 0; waited < SERVE_START_TIMEOUT_MS; waited += 20) {
        FILE *f = fopen(sp->log_path, "r");
        if (f) {
            char line[512];
            bool up = false;
            while (fgets(line, sizeof(line), f))
                if (strstr(line, want))
                    up = true;
            fclose(f);
            if (up)
                return 0;
        }
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            sp->pid = 0;
            return -ECHILD; /* it exited: its log says why */
        }
        sleep_ms(20);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    sp->pid = 0;
    return -ETIMEDOUT;
}

int serve_proc_stop(struct serve_proc *sp)
{
    if (sp->pid <= 0)
        return 0;
    kill(sp->pid, SIGTERM);
    int status = 0;
    for (int waited = 0; waited < SERVE_STOP_TIMEOUT_MS; waited += 20) {
        pid_t w = waitpid(sp->pid, &status, WNOHANG);
        if (w == sp->pid) {
            sp->pid = 0;
            return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
        }
        sleep_ms(20);
    }
    kill(sp->pid, SIGKILL);
    waitpid(sp->pid, NULL, 0);
    sp->pid = 0;
    return -ETIMEDOUT;
}

/* ---- producers ---------------------------------------------------------------------------- */

struct producer {
    const struct serve_produce_args *args;
    uint32_t id;
    pthread_t thread;
    struct hist *lat;
    uint64_t delivered, failed, bytes;
    uint64_t end_ns;
    char errmsg[200];
    _Atomic bool *go;
    _Atomic uint64_t *claimed; /* value bytes sent by every producer (bytes_max) */
    uint64_t deadline_ns;
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct producer *p = opaque;
    (void)rk;
    if (m->err) {
        if (!p->failed)
            snprintf(p->errmsg, sizeof(p->errmsg), "delivery: %s", rd_kafka_err2str(m->err));
        p->failed++;
        return;
    }
    uint64_t t0 = (uint64_t)(uintptr_t)m->_private;
    hist_add(p->lat, bench_now_ns() - t0);
    p->delivered++;
    p->bytes += m->len;
    progress_add(m->len);
}

static rd_kafka_conf_t *conf_new(const char *broker, char *err, size_t errlen)
{
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    if (rd_kafka_conf_set(c, "bootstrap.servers", broker, err, errlen) != RD_KAFKA_CONF_OK ||
        (client_ca[0] &&
         (rd_kafka_conf_set(c, "security.protocol", "ssl", err, errlen) != RD_KAFKA_CONF_OK ||
          rd_kafka_conf_set(c, "ssl.ca.location", client_ca, err, errlen) != RD_KAFKA_CONF_OK))) {
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    return c;
}

static int conf_set(rd_kafka_conf_t *c, const char *k, const char *v, char *err, size_t errlen)
{
    return rd_kafka_conf_set(c, k, v, err, errlen) == RD_KAFKA_CONF_OK ? 0 : -EINVAL;
}

static void *producer_main(void *arg)
{
    struct producer *p = arg;
    const struct serve_produce_args *a = p->args;
    char err[256] = "";
    rd_kafka_conf_t *c = conf_new(a->broker, err, sizeof(err));
    if (!c || conf_set(c, "enable.idempotence", a->acks_one ? "false" : "true", err, sizeof(err)) ||
        conf_set(c, "acks", a->acks_one ? "1" : "all", err, sizeof(err)) ||
        conf_set(c, "linger.ms", "5", err, sizeof(err)) ||
        conf_set(c, "batch.size", "1000000", err, sizeof(err)) ||
        conf_set(c, "queue.buffering.max.kbytes", "8192", err, sizeof(err)) ||
        conf_set(c, "message.timeout.ms", "60000", err, sizeof(err))) {
        snprintf(p->errmsg, sizeof(p->errmsg), "conf: %s", err);
        p->failed++;
        if (c)
            rd_kafka_conf_destroy(c);
        return NULL;
    }
    rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
    rd_kafka_conf_set_opaque(c, p);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
    if (!rk) {
        snprintf(p->errmsg, sizeof(p->errmsg), "rd_kafka_new: %s", err);
        p->failed++;
        return NULL;
    }
    /* Metadata and the producer id before the clock starts: the run measures records. */
    const struct rd_kafka_metadata *md = NULL;
    if (rd_kafka_metadata(rk, 0, NULL, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR)
        rd_kafka_metadata_destroy(md);
    while (!atomic_load_explicit(p->go, memory_order_acquire))
        sched_yield();
    int32_t partition = (int32_t)(p->id % a->partitions);
    uint64_t n = 0;
    for (;;) {
        uint64_t now = bench_now_ns();
        if (now >= p->deadline_ns || p->failed)
            break;
        if (a->bytes_max &&
            atomic_fetch_add(p->claimed, BENCH_VALUE_BYTES) + BENCH_VALUE_BYTES > a->bytes_max)
            break;
        /* 1 KiB values sliced from the shared pool, never copied (the pool outlives rk). */
        size_t at = (size_t)((n * 4099 + p->id * 65537) % (BENCH_POOL_BYTES - BENCH_VALUE_BYTES));
        rd_kafka_resp_err_t e = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(a->topic), RD_KAFKA_V_PARTITION(partition),
            RD_KAFKA_V_VALUE(bench_pool + at, BENCH_VALUE_BYTES), RD_KAFKA_V_MSGFLAGS(0),
            RD_KAFKA_V_OPAQUE((void *)(uintptr_t)now), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            if (a->bytes_max) /* not sent: its claim goes back */
                atomic_fetch_sub(p->claimed, BENCH_VALUE_BYTES);
            rd_kafka_poll(rk, 1);
            continue;
        }
        if (e) {
            snprintf(p->errmsg, sizeof(p->errmsg), "produce: %s", rd_kafka_err2str(e));
            p->failed++;
            break;
        }
        n++;
        if ((n & 63) == 0)
            rd_kafka_poll(rk, 0);
    }
    rd_kafka_flush(rk, 60000);
    rd_kafka_poll(rk, 0);
    p->end_ns = bench_now_ns();
    if (rd_kafka_outq_len(rk) > 0 && !p->errmsg[0])
        snprintf(p->errmsg, sizeof(p->errmsg), "%d records not acknowledged after 60 s",
                 rd_kafka_outq_len(rk));
    rd_kafka_destroy(rk);
    return NULL;
}

int serve_produce(const struct serve_produce_args *a, struct serve_result *out)
{
    memset(out, 0, sizeof(*out));
    struct producer *ps = calloc(a->producers, sizeof(*ps));
    struct hist *all = calloc(1, sizeof(*all));
    if (!ps || !all) {
        free(ps);
        free(all);
        return -ENOMEM;
    }
    _Atomic bool go = false;
    _Atomic uint64_t claimed = 0;
    uint32_t started = 0;
    int rc = 0;
    for (; started < a->producers; started++) {
        struct producer *p = &ps[started];
        p->args = a;
        p->id = started;
        p->go = &go;
        p->claimed = &claimed;
        p->deadline_ns = UINT64_MAX;
        p->lat = calloc(1, sizeof(*p->lat));
        if (!p->lat || pthread_create(&p->thread, NULL, producer_main, p) != 0) {
            free(p->lat);
            rc = -EAGAIN;
            break;
        }
    }
    /* Let every producer fetch metadata and its producer id before the clock starts. */
    sleep_ms(500);
    uint64_t t0 = bench_now_ns();
    for (uint32_t i = 0; i < started; i++)
        ps[i].deadline_ns = t0 + (uint64_t)(a->seconds * 1e9);
    atomic_store_explicit(&go, true, memory_order_release);
    uint64_t end = t0;
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(ps[i].thread, NULL);
        hist_merge(all, ps[i].lat);
        out->records += ps[i].delivered;
        out->bytes += ps[i].bytes;
        if (ps[i].end_ns > end)
            end = ps[i].end_ns;
        if ((ps[i].failed || ps[i].errmsg[0]) && !out->errmsg[0]) {
            snprintf(out->errmsg, sizeof(out->errmsg), "producer %u: %s", i, ps[i].errmsg);
            rc = rc ? rc : -EIO;
        }
        free(ps[i].lat);
    }
    out->seconds = (double)(end - t0) / 1e9;
    out->p50_us = hist_quantile_ns(all, 0.50) / 1e3;
    out->p99_us = hist_quantile_ns(all, 0.99) / 1e3;
    out->p999_us = hist_quantile_ns(all, 0.999) / 1e3;
    free(all);
    free(ps);
    return rc;
}

/* ---- the consumer ------------------------------------------------------------------------- */

int serve_consume(const char *broker, const char *topic, uint32_t partitions, uint64_t records,
                  struct serve_result *out)
{
    memset(out, 0, sizeof(*out));
    char err[256] = "";
    rd_kafka_conf_t *c = conf_new(broker, err, sizeof(err));
    if (!c || conf_set(c, "group.id", "ringtail-bench", err, sizeof(err)) ||
        conf_set(c, "isolation.level", "read_committed", err, sizeof(err)) ||
        conf_set(c, "enable.auto.commit", "false", err, sizeof(err)) ||
        conf_set(c, "fetch.max.bytes", "52428800", err, sizeof(err)) ||
        conf_set(c, "fetch.message.max.bytes", "8388608", err, sizeof(err)) ||
        conf_set(c, "queued.max.messages.kbytes", "262144", err, sizeof(err)) ||
        conf_set(c, "fetch.wait.max.ms", "100", err, sizeof(err))) {
        snprintf(out->errmsg, sizeof(out->errmsg), "consumer conf: %s", err);
        if (c)
            rd_kafka_conf_destroy(c);
        return -EINVAL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof(err));
    if (!rk) {
        snprintf(out->errmsg, sizeof(out->errmsg), "rd_kafka_new: %s", err);
        return -EINVAL;
    }
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new((int)partitions);
    for (uint32_t p = 0; p < partitions; p++)
        rd_kafka_topic_partition_list_add(parts, topic, (int32_t)p)->offset = 0;
    int rc = 0;
    uint64_t t0 = bench_now_ns();
    if (rd_kafka_assign(rk, parts) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        snprintf(out->errmsg, sizeof(out->errmsg), "assign failed");
        rc = -EIO;
    }
    /* Batches of messages from the consumer queue: one call per up to 4096 records, so the
     * figure is the client's and the broker's, not a per-message poll's. */
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    enum { BATCH = 4096 };
    rd_kafka_message_t **msgs = calloc(BATCH, sizeof(*msgs));
    if (!q || !msgs) {
        snprintf(out->errmsg, sizeof(out->errmsg), "no consumer queue");
        rc = rc ? rc : -ENOMEM;
    }
    uint64_t idle_since = bench_now_ns(), sum = 0;
    while (rc == 0 && out->records < records) {
        ssize_t n = rd_kafka_consume_batch_queue(q, 100, msgs, BATCH);
        uint64_t now = bench_now_ns();
        if (n <= 0) {
            if (now - idle_since > 30ull * 1000000000ull) {
                snprintf(out->errmsg, sizeof(out->errmsg),
                         "nothing for 30 s after %" PRIu64 " of %" PRIu64 " records", out->records,
                         records);
                rc = -ETIMEDOUT;
            }
            continue;
        }
        idle_since = now;
        for (ssize_t i = 0; i < n; i++) {
            rd_kafka_message_t *m = msgs[i];
            if (m->err) {
                if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF && rc == 0) {
                    snprintf(out->errmsg, sizeof(out->errmsg), "consume: %s",
                             rd_kafka_message_errstr(m));
                    rc = -EIO;
                }
            } else {
                out->records++;
                out->bytes += m->len;
                if (m->len >= 8) {
                    uint64_t v;
                    memcpy(&v, m->payload, sizeof(v)); /* read the value, as a consumer would */
                    sum += v;
                }
            }
            rd_kafka_message_destroy(m);
        }
        progress_add((uint64_t)n * BENCH_VALUE_BYTES);
    }
    free(msgs);
    if (q)
        rd_kafka_queue_destroy(q);
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    out->checksum = sum;
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return rc;
}

/* ---- the loopback limit ------------------------------------------------------------------- */

struct lb_recv {
    int fd;
    uint64_t bytes;
    uint64_t sum;
    int rc;
};

static void *lb_receiver(void *arg)
{
    struct lb_recv *r = arg;
    size_t cap = 1u << 20;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        r->rc = -ENOMEM;
        return NULL;
    }
    for (;;) {
        ssize_t n = recv(r->fd, buf, cap, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r->rc = -errno;
            break;
        }
        if (n == 0)
            break;
        r->bytes += (uint64_t)n;
        r->sum += buf[0]; /* the bytes arrive in user space, as a client's would */
    }
    free(buf);
    return NULL;
}

int serve_loopback_limit(uint64_t bytes, struct serve_result *out)
{
    memset(out, 0, sizeof(*out));
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ls < 0)
        return -errno;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    int rc = 0, cs = -1, as = -1;
    if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1) ||
        getsockname(ls, (struct sockaddr *)&sa, &len)) {
        rc = -errno;
        goto out;
    }
    cs = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (cs < 0 || connect(cs, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        rc = -errno;
        goto out;
    }
    as = accept(ls, NULL, NULL);
    if (as < 0) {
        rc = -errno;
        goto out;
    }
    struct lb_recv r = {.fd = as};
    pthread_t th;
    if (pthread_create(&th, NULL, lb_receiver, &r) != 0) {
        rc = -EAGAIN;
        goto out;
    }
    uint64_t t0 = bench_now_ns(), sent = 0;
    while (sent < bytes) {
        size_t chunk = bytes - sent < (1u << 20) ? (size_t)(bytes - sent) : (1u << 20);
        size_t at = (size_t)(sent % (BENCH_POOL_BYTES - (1u << 20) + 1)) & ~(size_t)4095;
        if (at + chunk > sizeof(bench_pool))
            at = 0;
        ssize_t n = send(cs, bench_pool + at, chunk, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        sent += (uint64_t)n;
        progress_add((uint64_t)n);
    }
    shutdown(cs, SHUT_WR);
    pthread_join(th, NULL);
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    out->bytes = r.bytes;
    out->checksum = r.sum;
    if (!rc)
        rc = r.rc;
    if (!rc && r.bytes != bytes)
        rc = -EIO;
out:
    if (as >= 0)
        close(as);
    if (cs >= 0)
        close(cs);
    close(ls);
    return rc;
}

/* ---- the transactional mix: a plain producer's latency beside committing producers ------- */

/* One transactional librdkafka producer committing transactions in a closed loop until *stop:
 * `records` values of `value_bytes` each, alternating over partitions p0 and p1, then
 * rd_kafka_commit_transaction, whose call-to-return time goes into lat. Used by the txn mix
 * (1 record, one partition) and by the commit-latency rows (10 records over two). */
struct txn_worker {
    const char *broker, *topic;
    char tid[96];
    uint32_t records;
    size_t value_bytes;
    int32_t p0, p1;
    pthread_t thread;
    _Atomic bool *stop;
    _Atomic bool ready;
    struct hist lat;
    uint64_t commits;
    char errmsg[200];
};

static void *txn_worker_main(void *arg)
{
    struct txn_worker *w = arg;
    char err[256] = "";
    rd_kafka_conf_t *c = conf_new(w->broker, err, sizeof(err));
    if (!c || conf_set(c, "transactional.id", w->tid, err, sizeof(err)) ||
        conf_set(c, "linger.ms", "0", err, sizeof(err))) {
        snprintf(w->errmsg, sizeof(w->errmsg), "conf: %s", err);
        if (c)
            rd_kafka_conf_destroy(c);
        atomic_store(&w->ready, true);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
    if (!rk) {
        snprintf(w->errmsg, sizeof(w->errmsg), "rd_kafka_new: %s", err);
        atomic_store(&w->ready, true);
        return NULL;
    }
    rd_kafka_error_t *e = rd_kafka_init_transactions(rk, 60000);
    atomic_store(&w->ready, true);
    uint64_t salt = (uint64_t)(w->p0 + 1) * 65537; /* producers start at different values */
    for (uint64_t n = 0; !e && !atomic_load(w->stop); n++) {
        e = rd_kafka_begin_transaction(rk);
        for (uint32_t r = 0; !e && r < w->records; r++) {
            size_t at = (size_t)((n * 4099 + (uint64_t)r * 257 + salt) %
                                 (BENCH_POOL_BYTES - w->value_bytes));
            rd_kafka_resp_err_t pe = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(w->topic), RD_KAFKA_V_PARTITION(r % 2 ? w->p1 : w->p0),
                RD_KAFKA_V_VALUE(bench_pool + at, w->value_bytes), RD_KAFKA_V_END);
            if (pe) {
                snprintf(w->errmsg, sizeof(w->errmsg), "produce: %s", rd_kafka_err2str(pe));
                goto out;
            }
        }
        if (e)
            break;
        uint64_t t0 = bench_now_ns();
        e = rd_kafka_commit_transaction(rk, 30000);
        if (!e) {
            hist_add(&w->lat, bench_now_ns() - t0);
            w->commits++;
        }
    }
out:
    if (e) {
        snprintf(w->errmsg, sizeof(w->errmsg), "%s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
    rd_kafka_destroy(rk);
    return NULL;
}

/* Starts the n workers (filled in by the caller, stop set) and waits until each has
 * initialised its transactions (or failed): how many started; -EAGAIN in *rc if one could not. */
static uint32_t txn_workers_start(struct txn_worker *ws, uint32_t n, int *rc)
{
    uint32_t started = 0;
    for (; started < n; started++)
        if (pthread_create(&ws[started].thread, NULL, txn_worker_main, &ws[started]) != 0) {
            *rc = -EAGAIN;
            break;
        }
    for (uint32_t i = 0; i < started; i++)
        while (!atomic_load(&ws[i].ready))
            sleep_ms(10);
    return started;
}

/* Joins the started workers: their commits summed, their latencies merged into lat (if not
 * NULL), the first error into errmsg (and -EIO into *rc unless it holds one). */
static uint64_t txn_workers_join(struct txn_worker *ws, uint32_t started, struct hist *lat,
                                 char *errmsg, size_t errlen, int *rc)
{
    uint64_t commits = 0;
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(ws[i].thread, NULL);
        commits += ws[i].commits;
        if (lat)
            hist_merge(lat, &ws[i].lat);
        if (ws[i].errmsg[0] && !errmsg[0]) {
            snprintf(errmsg, errlen, "transactional producer %u: %s", i, ws[i].errmsg);
            *rc = *rc ? *rc : -EIO;
        }
    }
    return commits;
}

static void on_plain_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    *(int *)opaque = m->err ? (int)m->err : 1;
}

int serve_txn_mix(const struct serve_txn_mix_args *a, struct serve_result *out, uint64_t *commits)
{
    memset(out, 0, sizeof(*out));
    *commits = 0;
    struct txn_worker *ws = calloc(a->txn_producers, sizeof(*ws));
    struct hist *lat = calloc(1, sizeof(*lat));
    if (!ws || !lat) {
        free(ws);
        free(lat);
        return -ENOMEM;
    }
    _Atomic bool stop = false;
    int rc = 0;
    for (uint32_t i = 0; i < a->txn_producers; i++) {
        int32_t partition = (int32_t)(1 + i % a->txn_partitions); /* 0 is the plain one's */
        ws[i] = (struct txn_worker){.broker = a->broker,
                                    .topic = a->txn_topic,
                                    .records = 1,
                                    .value_bytes = BENCH_VALUE_BYTES,
                                    .p0 = partition,
                                    .p1 = partition,
                                    .stop = &stop};
        snprintf(ws[i].tid, sizeof(ws[i].tid), "bench-txn-%u", i);
    }
    uint32_t started = txn_workers_start(ws, a->txn_producers, &rc);
    /* The plain producer: one record at a time, acks=all, each waited for (closed loop), so
     * its latency is the broker's answer time with nothing of its own queued ahead. */
    char err[256] = "";
    int delivered = 0;
    rd_kafka_conf_t *c = conf_new(a->broker, err, sizeof(err));
    if (!c || conf_set(c, "acks", "all", err, sizeof(err)) ||
        conf_set(c, "enable.idempotence", "false", err, sizeof(err)) ||
        conf_set(c, "linger.ms", "0", err, sizeof(err))) {
        snprintf(out->errmsg, sizeof(out->errmsg), "conf: %s", err);
        if (c)
            rd_kafka_conf_destroy(c);
        rc = rc ? rc : -EINVAL;
        c = NULL;
    }
    rd_kafka_t *rk = NULL;
    if (c) {
        rd_kafka_conf_set_dr_msg_cb(c, on_plain_delivery);
        rd_kafka_conf_set_opaque(c, &delivered);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
        if (!rk) {
            snprintf(out->errmsg, sizeof(out->errmsg), "rd_kafka_new: %s", err);
            rc = rc ? rc : -EINVAL;
        }
    }
    uint64_t t0 = bench_now_ns(), deadline = t0 + (uint64_t)(a->seconds * 1e9);
    for (uint64_t n = 0; rk && rc == 0 && bench_now_ns() < deadline; n++) {
        delivered = 0;
        uint64_t s = bench_now_ns();
        rd_kafka_resp_err_t pe = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(a->plain_topic), RD_KAFKA_V_PARTITION(0),
            RD_KAFKA_V_VALUE(bench_pool + (n % 1024) * 64, BENCH_VALUE_BYTES), RD_KAFKA_V_END);
        if (pe) {
            snprintf(out->errmsg, sizeof(out->errmsg), "produce: %s", rd_kafka_err2str(pe));
            rc = -EIO;
            break;
        }
        while (!delivered)
            rd_kafka_poll(rk, 100);
        if (delivered != 1) {
            snprintf(out->errmsg, sizeof(out->errmsg), "delivery: %s",
                     rd_kafka_err2str((rd_kafka_resp_err_t)delivered));
            rc = -EIO;
            break;
        }
        hist_add(lat, bench_now_ns() - s);
        out->records++;
        out->bytes += BENCH_VALUE_BYTES;
        progress_add(BENCH_VALUE_BYTES);
    }
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    if (rk)
        rd_kafka_destroy(rk);
    atomic_store(&stop, true);
    *commits = txn_workers_join(ws, started, NULL, out->errmsg, sizeof(out->errmsg), &rc);
    out->p50_us = hist_quantile_ns(lat, 0.50) / 1e3;
    out->p99_us = hist_quantile_ns(lat, 0.99) / 1e3;
    out->p999_us = hist_quantile_ns(lat, 0.999) / 1e3;
    free(lat);
    free(ws);
    return rc;
}

/* ---- small transactions' commit latency (issue 25 item 3) ------------------------------- */

#define TXN_COMMIT_RECORDS 10
#define TXN_COMMIT_VALUE   100

int serve_txn_commit(const struct serve_txn_commit_args *a, struct serve_txn_commit_result *out)
{
    memset(out, 0, sizeof(*out));
    struct txn_worker *ws = calloc(a->producers, sizeof(*ws));
    struct hist *all = calloc(1, sizeof(*all));
    if (!ws || !all) {
        free(ws);
        free(all);
        return -ENOMEM;
    }
    _Atomic bool stop = false;
    int rc = 0;
    for (uint32_t i = 0; i < a->producers; i++) {
        ws[i] = (struct txn_worker){.broker = a->broker,
                                    .topic = a->topic,
                                    .records = TXN_COMMIT_RECORDS,
                                    .value_bytes = TXN_COMMIT_VALUE,
                                    .p0 = (int32_t)(i % a->partitions),
                                    .p1 = (int32_t)((i + 1) % a->partitions),
                                    .stop = &stop};
        snprintf(ws[i].tid, sizeof(ws[i].tid), "bench-commit-%s-%u", a->tag, i);
    }
    uint32_t started = txn_workers_start(ws, a->producers, &rc);
    uint64_t before = 0;
    for (uint32_t i = 0; i < started; i++)
        before += ws[i].commits;
    uint64_t t0 = bench_now_ns();
    sleep_ms((long)(a->seconds * 1000));
    atomic_store(&stop, true);
    out->commits = txn_workers_join(ws, started, all, out->errmsg, sizeof(out->errmsg), &rc);
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    out->commits -= before < out->commits ? before : 0;
    out->p50_us = hist_quantile_ns(all, 0.50) / 1e3;
    out->p99_us = hist_quantile_ns(all, 0.99) / 1e3;
    if (!out->commits && !rc) {
        snprintf(out->errmsg, sizeof(out->errmsg), "no transaction committed");
        rc = -EIO;
    }
    free(ws);
    free(all);
    return rc;
}
