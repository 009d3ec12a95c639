/*
 * bench_cluster.c — the cluster workload CL (issue 24 item 6): three `ringtail serve --node-id N
 * --voters ...` processes on 127.0.0.1 (free ports, data directories under the bench's scratch),
 * and the three things replication costs, measured against them in one run:
 *
 *   produce:   the S producers (bench_serve.c: librdkafka, 1 KiB values) against a topic of
 *              replication factor 3 with min.insync.replicas=2 at acks=all, beside a topic of
 *              replication factor 1 on the same three nodes at acks=all and at acks=1 (rows
 *              and the RF3/RF1 ratio: bench_main.c);
 *   failover:  a librdkafka producer (acks=all, not idempotent: an idempotent one may stop with
 *              a fatal error at a new leader, docs/cluster.md §9.1) writes one partition of the
 *              RF3 topic about once a millisecond; its leader (never the active controller, so
 *              the metadata quorum keeps its leader) is SIGKILLed; the figure is the time from
 *              the kill to the first delivery report acknowledged by another node. The killed
 *              node is restarted and the trial ends once every ISR is whole again;
 *   catch-up:  a follower (neither controller nor leader of what is produced) stopped with
 *              SIGTERM, `bytes` of values produced at acks=all to every partition, the follower
 *              restarted; its lag, summed over the topic's partitions, is read from `ringtail
 *              cluster status --replica-listener ...` (each replica's log end asked of the
 *              node itself, listed yet or not, tools/cmd_cluster.c) every 20 ms until it is 0. The rate is the value bytes
 *              behind the last sample still showing the first lag seen, over the time from that
 *              sample to the first sample at lag 0 — a lower bound within one sample.
 *
 * It owns the node processes it starts (SIGKILLed if they do not stop on SIGTERM) and their
 * logs, and nothing else; it never asserts a figure (bench_main.c prints ratios and targets).
 * The cluster's view comes only from `ringtail cluster status` and librdkafka, as a user's.
 */
#include "bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#define CL_START_TIMEOUT_MS 30000
#define CL_STOP_TIMEOUT_MS  20000
#define CL_POLL_MS          20

static void cl_sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    return (double)bench_now_ns() / 1e9;
}

/* Six distinct free ports, bound together so none repeats. */
static int free_ports(uint16_t *out, int n)
{
    int fds[8], rc = 0, made = 0;
    for (; made < n && rc == 0; made++) {
        fds[made] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof(sa);
        if (fds[made] < 0 || bind(fds[made], (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
            getsockname(fds[made], (struct sockaddr *)&sa, &len) != 0)
            rc = -errno;
        out[made] = ntohs(sa.sin_port);
    }
    for (int i = 0; i < made; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return rc;
}

/* ---- the node processes ------------------------------------------------------------------ */

static bool log_has(const char *path, const char *want)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, want) != NULL;
    fclose(f);
    return found;
}

int cluster_node_start(struct cluster *c, int id)
{
    char dir[sizeof(c->dir) + 8], listen[32], ctl[32], session[16];
    snprintf(dir, sizeof(dir), "%s/n%d", c->dir, id);
    mkdir(dir, 0755);
    snprintf(c->log_path[id], sizeof(c->log_path[id]), "%s/n%d.log", c->dir, id);
    snprintf(listen, sizeof(listen), "127.0.0.1:%u", (unsigned)c->kport[id]);
    snprintf(ctl, sizeof(ctl), "127.0.0.1:%u", (unsigned)c->cport[id]);
    snprintf(session, sizeof(session), "%u", c->session_ms);
    char node[8];
    snprintf(node, sizeof(node), "%d", id);
    /* the "listening on" line of this incarnation: the log is truncated at each start */
    int log = open(c->log_path[id], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int rc = -errno;
        close(log);
        return rc;
    }
    if (pid == 0) {
        dup2(log, 1);
        dup2(log, 2);
        execl(c->ringtail, "ringtail", "serve", dir, "--listen", listen, "--node-id", node,
              "--controller-listen", ctl, "--voters", c->voters, "--broker-session-timeout-ms",
              session, (char *)NULL);
        dprintf(2, "exec %s: %s\n", c->ringtail, strerror(errno));
        _exit(127);
    }
    close(log);
    c->pid[id] = pid;
    char want[64];
    snprintf(want, sizeof(want), "listening on %s", listen);
    for (int waited = 0; waited < CL_START_TIMEOUT_MS; waited += CL_POLL_MS) {
        if (log_has(c->log_path[id], want))
            return 0;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            c->pid[id] = 0;
            return -ECHILD;
        }
        cl_sleep_ms(CL_POLL_MS);
    }
    cluster_node_stop(c, id, SIGKILL);
    return -ETIMEDOUT;
}

int cluster_node_stop(struct cluster *c, int id, int sig)
{
    pid_t pid = c->pid[id];
    if (pid <= 0)
        return 0;
    kill(pid, sig);
    int status = 0;
    for (int waited = 0; waited < CL_STOP_TIMEOUT_MS; waited += CL_POLL_MS) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            c->pid[id] = 0;
            if (sig == SIGKILL)
                return 0;
            return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
        }
        cl_sleep_ms(CL_POLL_MS);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    c->pid[id] = 0;
    return -ETIMEDOUT;
}

int cluster_start(struct cluster *c, const char *ringtail, const char *dir, uint32_t session_ms)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->ringtail, sizeof(c->ringtail), "%s", ringtail);
    snprintf(c->dir, sizeof(c->dir), "%s", dir);
    c->session_ms = session_ms;
    uint16_t ports[2 * CLUSTER_NODES];
    int rc = free_ports(ports, 2 * CLUSTER_NODES);
    if (rc)
        return rc;
    for (int i = 1; i <= CLUSTER_NODES; i++) {
        c->cport[i] = ports[i - 1];
        c->kport[i] = ports[CLUSTER_NODES + i - 1];
    }
    snprintf(c->voters, sizeof(c->voters), "1@127.0.0.1:%u,2@127.0.0.1:%u,3@127.0.0.1:%u",
             (unsigned)c->cport[1], (unsigned)c->cport[2], (unsigned)c->cport[3]);
    snprintf(c->bootstrap, sizeof(c->bootstrap), "127.0.0.1:%u,127.0.0.1:%u,127.0.0.1:%u",
             (unsigned)c->kport[1], (unsigned)c->kport[2], (unsigned)c->kport[3]);
    mkdir(dir, 0755);
    for (int i = 1; i <= CLUSTER_NODES && rc == 0; i++)
        rc = cluster_node_start(c, i);
    if (rc == 0)
        rc = cluster_wait(c, NULL, 0, 30.0);
    return rc;
}

int cluster_stop(struct cluster *c)
{
    int rc = 0;
    for (int i = 1; i <= CLUSTER_NODES; i++) {
        int r = cluster_node_stop(c, i, SIGTERM);
        rc = rc ? rc : r;
    }
    return rc;
}

/* ---- the cluster's view: `ringtail cluster status` ---------------------------------------- */

/* "1:0,2:5,3:?" into values by replica order; '?' is -1. */
static void parse_pairs(const char *s, int64_t *out, uint32_t max)
{
    for (uint32_t k = 0; k < max && s && *s; k++) {
        const char *colon = strchr(s, ':');
        if (!colon)
            break;
        out[k] = colon[1] == '?' ? -1 : strtoll(colon + 1, NULL, 10);
        s = strchr(colon, ',');
        if (s)
            s++;
    }
}

static void parse_ids(const char *s, int32_t *out, uint32_t *n, uint32_t max)
{
    *n = 0;
    while (s && *s && *s != '-' && *n < max) {
        out[(*n)++] = (int32_t)strtol(s, NULL, 10);
        s = strchr(s, ',');
        if (s)
            s++;
    }
}

/* From node `via` (0: the first running node that names a controller). Every node is named
 * with --replica-listener, so a restarted node's lag is read before it is listed again. */
static int view_read_via(const struct cluster *c, int only, const char *topic,
                         struct cluster_view *v)
{
    memset(v, 0, sizeof(*v));
    v->controller = -1;
    for (int via = 1; via <= CLUSTER_NODES; via++) {
        if (c->pid[via] <= 0 || (only && via != only))
            continue;
        char cmd[sizeof(c->ringtail) + 256];
        snprintf(cmd, sizeof(cmd),
                 "'%s' cluster status --bootstrap 127.0.0.1:%u --replica-listener "
                 "1@127.0.0.1:%u --replica-listener 2@127.0.0.1:%u --replica-listener "
                 "3@127.0.0.1:%u 2>/dev/null",
                 c->ringtail, (unsigned)c->kport[via], (unsigned)c->kport[1], (unsigned)c->kport[2],
                 (unsigned)c->kport[3]);
        FILE *p = popen(cmd, "r");
        if (!p)
            return -errno;
        char line[1024];
        memset(v, 0, sizeof(*v));
        v->controller = -1;
        while (fgets(line, sizeof(line), p)) {
            line[strcspn(line, "\n")] = 0;
            char *f[16];
            int nf = 0;
            for (char *s = line, *tok; nf < 16 && (tok = strsep(&s, "\t")) != NULL;)
                f[nf++] = tok;
            if (nf >= 2 && strcmp(f[0], "controller") == 0)
                v->controller = (int32_t)strtol(f[1], NULL, 10);
            else if (nf >= 4 && strcmp(f[0], "node") == 0 && strcmp(f[3], "unfenced") == 0)
                v->unfenced++;
            else if (nf >= 15 && strcmp(f[0], "partition") == 0 && topic &&
                     strcmp(f[1], topic) == 0) {
                uint32_t i = (uint32_t)strtoul(f[2], NULL, 10);
                if (i >= CLUSTER_PARTITIONS_MAX)
                    continue;
                struct cluster_part *cp = &v->parts[i];
                cp->leader = (int32_t)strtol(f[4], NULL, 10);
                cp->epoch = (int32_t)strtol(f[6], NULL, 10);
                parse_ids(f[8], cp->replicas, &cp->replicas_count, CLUSTER_NODES);
                parse_ids(f[10], cp->isr, &cp->isr_count, CLUSTER_NODES);
                for (uint32_t k = 0; k < CLUSTER_NODES; k++)
                    cp->lag[k] = cp->end[k] = -1;
                parse_pairs(f[12], cp->lag, cp->replicas_count);
                parse_pairs(f[14], cp->end, cp->replicas_count);
                if (i + 1 > v->partitions)
                    v->partitions = i + 1;
            }
        }
        int st = pclose(p);
        if (st == 0 && v->controller > 0)
            return 0;
    }
    return -EAGAIN;
}

int cluster_view_read(const struct cluster *c, const char *topic, struct cluster_view *v)
{
    return view_read_via(c, 0, topic, v);
}

/* Every node listed and, for `topic`, `partitions` partitions led with ISR = replicas. */
static bool view_whole(const struct cluster_view *v, const char *topic, uint32_t partitions)
{
    if (v->unfenced != CLUSTER_NODES || v->controller <= 0)
        return false;
    if (!topic)
        return true;
    if (v->partitions != partitions)
        return false;
    for (uint32_t i = 0; i < partitions; i++)
        if (v->parts[i].leader <= 0 || v->parts[i].isr_count != v->parts[i].replicas_count ||
            v->parts[i].replicas_count == 0)
            return false;
    return true;
}

int cluster_wait(const struct cluster *c, const char *topic, uint32_t partitions, double timeout_s)
{
    double end = now_s() + timeout_s;
    struct cluster_view v;
    while (now_s() < end) {
        /* every node's own Metadata: a client bootstrapped on any of them sees the same */
        bool whole = true;
        for (int via = 1; via <= CLUSTER_NODES && whole; via++)
            whole = view_read_via(c, via, topic, &v) == 0 && view_whole(&v, topic, partitions);
        if (whole)
            return 0;
        cl_sleep_ms(100);
    }
    return -ETIMEDOUT;
}

/* ---- topics ------------------------------------------------------------------------------- */

int cluster_topic_create(const struct cluster *c, const char *topic, uint32_t partitions,
                         uint32_t rf, uint32_t min_isr, char *err, size_t errlen)
{
    char e[256] = "", v[16];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", c->bootstrap, e, sizeof(e)) !=
        RD_KAFKA_CONF_OK) {
        snprintf(err, errlen, "conf: %s", e);
        rd_kafka_conf_destroy(conf);
        return -EINVAL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof(e));
    if (!rk) {
        snprintf(err, errlen, "rd_kafka_new: %s", e);
        return -EINVAL;
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    int rc = -EIO;
    /* the controller may move or not be known yet: NOT_CONTROLLER is retried, as a user would */
    for (int attempt = 0; attempt < 10 && rc; attempt++) {
        rd_kafka_NewTopic_t *nt =
            rd_kafka_NewTopic_new(topic, (int)partitions, (int)rf, e, sizeof(e));
        snprintf(v, sizeof(v), "%u", min_isr);
        if (!nt || (min_isr && rd_kafka_NewTopic_set_config(nt, "min.insync.replicas", v))) {
            snprintf(err, errlen, "NewTopic: %s", e);
            if (nt)
                rd_kafka_NewTopic_destroy(nt);
            break;
        }
        rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
        rd_kafka_AdminOptions_set_operation_timeout(o, 15000, e, sizeof(e));
        rd_kafka_CreateTopics(rk, &nt, 1, o, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
        rd_kafka_resp_err_t te = RD_KAFKA_RESP_ERR__TIMED_OUT;
        const char *msg = "no answer in 30 s";
        if (ev) {
            const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
            size_t n = 0;
            const rd_kafka_topic_result_t **tr =
                res ? rd_kafka_CreateTopics_result_topics(res, &n) : NULL;
            te = rd_kafka_event_error(ev);
            msg = rd_kafka_event_error_string(ev);
            if (!te && n == 1) {
                te = rd_kafka_topic_result_error(tr[0]);
                msg = rd_kafka_topic_result_error_string(tr[0]);
            }
        }
        if (te == RD_KAFKA_RESP_ERR_NO_ERROR)
            rc = 0;
        else
            snprintf(err, errlen, "CreateTopics %s: %s (%s)", topic, rd_kafka_err2name(te),
                     msg ? msg : "");
        if (ev)
            rd_kafka_event_destroy(ev);
        rd_kafka_AdminOptions_destroy(o);
        rd_kafka_NewTopic_destroy(nt);
        if (rc && te != RD_KAFKA_RESP_ERR_NOT_CONTROLLER && te != RD_KAFKA_RESP_ERR__TIMED_OUT)
            break;
        if (rc)
            cl_sleep_ms(500);
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
    if (rc == 0 && cluster_wait(c, topic, partitions, 30.0) != 0) {
        snprintf(err, errlen, "topic %s: not every partition led with a whole ISR in 30 s", topic);
        rc = -ETIMEDOUT;
    }
    return rc;
}

/* ---- failover ----------------------------------------------------------------------------- */

struct fo_run {
    const struct cluster *c;
    const char *topic;
    int32_t partition;
    _Atomic bool stop;
    _Atomic bool ready;
    _Atomic int32_t killed;   /* the node killed; 0 before the kill */
    _Atomic uint64_t kill_ns; /* when */
    _Atomic uint64_t back_ns; /* first acknowledgement by another node after kill_ns */
    _Atomic uint64_t acked;   /* acknowledgements before the kill */
    _Atomic uint64_t failed;  /* delivery reports with an error */
    char errmsg[200];
};

static void fo_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct fo_run *r = opaque;
    (void)rk;
    if (m->err) {
        atomic_fetch_add(&r->failed, 1);
        return;
    }
    uint64_t now = bench_now_ns();
    int32_t killed = atomic_load(&r->killed);
    if (!killed) {
        atomic_fetch_add(&r->acked, 1);
        return;
    }
    uint64_t expected = 0;
    if (now > atomic_load(&r->kill_ns) && rd_kafka_message_broker_id(m) != killed)
        atomic_compare_exchange_strong(&r->back_ns, &expected, now);
}

static void *fo_producer(void *arg)
{
    struct fo_run *r = arg;
    char e[256] = "";
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    static const char *const kv[][2] = {
        {"acks", "all"},
        {"enable.idempotence", "false"},
        {"linger.ms", "0"},
        {"message.timeout.ms", "60000"},
        {"retry.backoff.ms", "50"},
        {"topic.metadata.refresh.fast.interval.ms", "50"},
        {"reconnect.backoff.ms", "50"},
        {"reconnect.backoff.max.ms", "200"},
        {"log_level", "2"}, /* the killed leader's refused connections are expected */
    };
    bool ok = rd_kafka_conf_set(conf, "bootstrap.servers", r->c->bootstrap, e, sizeof(e)) ==
              RD_KAFKA_CONF_OK;
    for (size_t i = 0; ok && i < sizeof(kv) / sizeof(kv[0]); i++)
        ok = rd_kafka_conf_set(conf, kv[i][0], kv[i][1], e, sizeof(e)) == RD_KAFKA_CONF_OK;
    rd_kafka_t *rk = NULL;
    if (ok) {
        rd_kafka_conf_set_dr_msg_cb(conf, fo_delivery);
        rd_kafka_conf_set_opaque(conf, r);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof(e));
    } else {
        rd_kafka_conf_destroy(conf);
    }
    if (!rk) {
        snprintf(r->errmsg, sizeof(r->errmsg), "producer: %s", e);
        atomic_store(&r->ready, true);
        return NULL;
    }
    /* about one record per millisecond: a producer writing, not a flood queued ahead */
    for (uint64_t n = 0; !atomic_load(&r->stop); n++) {
        size_t at = (size_t)((n * 4099) % (BENCH_POOL_BYTES - BENCH_VALUE_BYTES));
        rd_kafka_resp_err_t pe =
            rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(r->topic), RD_KAFKA_V_PARTITION(r->partition),
                              RD_KAFKA_V_VALUE(bench_pool + at, BENCH_VALUE_BYTES), RD_KAFKA_V_END);
        if (pe && pe != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            snprintf(r->errmsg, sizeof(r->errmsg), "produce: %s", rd_kafka_err2str(pe));
            break;
        }
        if (atomic_load(&r->acked) > 0)
            atomic_store(&r->ready, true);
        rd_kafka_poll(rk, 1);
    }
    atomic_store(&r->ready, true);
    rd_kafka_flush(rk, 5000);
    rd_kafka_destroy(rk);
    return NULL;
}

int cluster_failover(struct cluster *c, const char *topic, uint32_t partitions, double *ms_out,
                     int32_t *killed_out, char *err, size_t errlen)
{
    *ms_out = -1;
    *killed_out = 0;
    struct cluster_view v;
    int rc = cluster_view_read(c, topic, &v);
    int32_t part = -1;
    for (uint32_t i = 0; rc == 0 && i < v.partitions && part < 0; i++)
        if (v.parts[i].leader > 0 && v.parts[i].leader != v.controller)
            part = (int32_t)i;
    if (rc || part < 0) {
        snprintf(err, errlen, "no partition of %s led by a node other than the controller", topic);
        return rc ? rc : -EAGAIN;
    }
    int32_t victim = v.parts[part].leader;
    struct fo_run r = {.c = c, .topic = topic, .partition = part};
    pthread_t th;
    if (pthread_create(&th, NULL, fo_producer, &r) != 0)
        return -EAGAIN;
    double until = now_s() + 15;
    while (!atomic_load(&r.ready) && now_s() < until)
        cl_sleep_ms(10);
    cl_sleep_ms(300); /* writing steadily before the kill */
    if (atomic_load(&r.acked) == 0) {
        snprintf(err, errlen, "the producer had nothing acknowledged before the kill %s", r.errmsg);
        rc = -EIO;
    } else {
        atomic_store(&r.kill_ns, bench_now_ns());
        atomic_store(&r.killed, victim);
        kill(c->pid[victim], SIGKILL);
        progress_phase("CL failover: leader killed");
        until = now_s() + 60;
        while (!atomic_load(&r.back_ns) && now_s() < until && !r.errmsg[0])
            cl_sleep_ms(5);
        uint64_t back = atomic_load(&r.back_ns);
        if (back) {
            *ms_out = (double)(back - atomic_load(&r.kill_ns)) / 1e6;
            *killed_out = victim;
        } else {
            snprintf(err, errlen, "no acknowledgement from another node within 60 s %s", r.errmsg);
            rc = -ETIMEDOUT;
        }
    }
    atomic_store(&r.stop, true);
    pthread_join(th, NULL);
    cluster_node_stop(c, victim, SIGKILL); /* reaps it */
    int src = cluster_node_start(c, victim);
    if (src == 0)
        src = cluster_wait(c, topic, partitions, 60.0);
    if (src && !rc) {
        snprintf(err, errlen, "node %d did not come back with whole ISRs in 60 s", victim);
        rc = src;
    }
    return rc;
}

/* ---- follower catch-up -------------------------------------------------------------------- */

/* The lag (offsets) summed over `topic`'s partitions of replica `id`; -1: not known. */
static int64_t lag_of(const struct cluster_view *v, int32_t id)
{
    int64_t sum = 0;
    bool seen = false;
    for (uint32_t i = 0; i < v->partitions; i++)
        for (uint32_t k = 0; k < v->parts[i].replicas_count; k++)
            if (v->parts[i].replicas[k] == id) {
                if (v->parts[i].lag[k] < 0)
                    return -1;
                sum += v->parts[i].lag[k];
                seen = true;
            }
    return seen ? sum : -1;
}

int cluster_catchup(struct cluster *c, const char *topic, uint32_t partitions, uint32_t producers,
                    uint64_t bytes, struct cluster_catchup *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    struct cluster_view v;
    int rc = cluster_view_read(c, topic, &v);
    int32_t f = 0;
    for (int32_t id = 1; rc == 0 && id <= CLUSTER_NODES && !f; id++) {
        bool leads = id == v.controller;
        for (uint32_t i = 0; i < v.partitions; i++)
            leads = leads || v.parts[i].leader == id;
        if (!leads)
            f = id;
    }
    if (rc || !f)
        for (int32_t id = 1; id <= CLUSTER_NODES && !f; id++)
            if (id != v.controller)
                f = id; /* its leaderships move at its controlled shutdown */
    if (!f) {
        snprintf(err, errlen, "no node to stop");
        return -EAGAIN;
    }
    out->follower = f;
    rc = cluster_node_stop(c, f, SIGTERM);
    if (rc) {
        snprintf(err, errlen, "node %d did not stop cleanly (see %s)", f, c->log_path[f]);
        return rc;
    }
    progress_phase("CL catch-up: producing with a follower stopped");
    char running[96] = ""; /* the two running nodes: no refused connection to log */
    for (int id = 1; id <= CLUSTER_NODES; id++)
        if (id != f) {
            size_t used = strlen(running);
            snprintf(running + used, sizeof(running) - used, "%s127.0.0.1:%u", used ? "," : "",
                     (unsigned)c->kport[id]);
        }
    struct serve_produce_args a = {.broker = running,
                                   .topic = topic,
                                   .producers = producers,
                                   .partitions = partitions,
                                   .seconds = 600,
                                   .bytes_max = bytes};
    struct serve_result sr;
    rc = serve_produce(&a, &sr);
    if (rc) {
        snprintf(err, errlen, "produce: %s", sr.errmsg);
        return rc;
    }
    out->produce_mb_s = sr.seconds > 0 ? (double)sr.bytes / 1e6 / sr.seconds : 0;
    progress_phase("CL catch-up: follower restarted");
    double t0 = now_s();
    rc = cluster_node_start(c, f);
    if (rc) {
        snprintf(err, errlen, "node %d did not restart (see %s)", f, c->log_path[f]);
        return rc;
    }
    int64_t first = -1;
    double first_t = 0, end_t = 0, until = t0 + 120;
    while (now_s() < until) {
        double t = now_s();
        if (cluster_view_read(c, topic, &v) == 0) {
            int64_t lag = lag_of(&v, f);
            if (lag > 0 && lag >= first) { /* the last sample not yet below the first lag */
                first = lag;
                first_t = t;
            }
            if (lag == 0) {
                end_t = t;
                break;
            }
        }
        cl_sleep_ms(CL_POLL_MS);
    }
    if (end_t == 0) {
        snprintf(err, errlen, "node %d not caught up within 120 s", f);
        return -ETIMEDOUT;
    }
    out->restart_to_sync_s = end_t - t0;
    if (first > 0) {
        out->bytes = (uint64_t)first * BENCH_VALUE_BYTES;
        out->seconds = end_t - first_t;
    } else { /* caught up before the first sample: from the restart, start-up included */
        out->bytes = sr.bytes;
        out->seconds = end_t - t0;
        out->from_restart = true;
    }
    out->produced_bytes = sr.bytes;
    return cluster_wait(c, topic, partitions, 60.0);
}
