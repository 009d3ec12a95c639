/*
 * test_cluster_quorum.c — the metadata quorum (tools/kafka/cluster/quorum.c) on libraft, three
 * members as three forked processes on 127.0.0.1 ports, each applying the committed records to a
 * metadata image (metadata_image.c). The parent drives them through a pipe each (a line per
 * command, a line per answer) and kills them with SIGKILL:
 *   - a leader is elected, and every member names it (CQ1: the quorum's thread does it all);
 *   - records proposed on the leader are applied in the same order on all three: equal chain
 *     hashes and image digests at equal indexes (CQ2, MI1); a follower refuses a proposal with
 *     QUORUM_E_NOT_CONTROLLER (CQ3);
 *   - SIGKILL of the leader: the two others elect a new one (polled, never held to a tight
 *     bound), keep every record committed before, and commit new proposals;
 *   - the killed member, restarted on its directory, restores its snapshot (taken every 64
 *     entries here) and catches up to the same image (CQ2, MI3); a second start does not
 *     bootstrap again (CQ4); one down while 300 records commit catches up too, by AppendEntries
 *     or, when the leader's log no longer reaches back to it, by InstallSnapshot (MI3).
 * It prints the figures: election time after SIGKILL, and the apply rate of small records.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
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

#include "helpers/test_util.h"
#include "tools/kafka/cluster/metadata_image.h"
#include "tools/kafka/cluster/quorum.h"

#define NODES 3

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the member (child process) ---- */

struct member {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct metadata_image img;
    int done, failed, last_err;
    uint64_t first_index, last_index;
};

static void m_apply(void *ctx, uint64_t index, const void *rec, size_t len)
{
    struct member *m = ctx;
    pthread_mutex_lock(&m->mu);
    (void)metadata_image_apply(&m->img, index, rec, len);
    pthread_mutex_unlock(&m->mu);
}
static int m_snapshot(void *ctx, void **buf, size_t *len)
{
    struct member *m = ctx;
    pthread_mutex_lock(&m->mu);
    int rc = metadata_image_snapshot(&m->img, buf, len);
    pthread_mutex_unlock(&m->mu);
    return rc;
}
static int m_restore(void *ctx, const void *buf, size_t len)
{
    struct member *m = ctx;
    char err[256];
    pthread_mutex_lock(&m->mu);
    int rc = metadata_image_restore(&m->img, buf, len, err, sizeof(err));
    pthread_mutex_unlock(&m->mu);
    if (rc)
        fprintf(stderr, "restore: %s\n", err);
    return rc;
}
static void m_done(void *ctx, int status, uint64_t index)
{
    struct member *m = ctx;
    pthread_mutex_lock(&m->mu);
    m->done++;
    if (status) {
        m->failed++;
        m->last_err = status;
    } else {
        if (!m->first_index || index < m->first_index)
            m->first_index = index;
        if (index > m->last_index)
            m->last_index = index;
    }
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

/* The s-th test record: every type, in an order whose effect depends on the order. */
static size_t test_record(uint64_t s, uint8_t *buf, size_t cap)
{
    uint8_t id[16] = {0};
    char name[64];
    switch (s % 4) {
    case 0:
        snprintf(name, sizeof(name), "h%" PRIu64, s);
        return mi_encode_register_broker(buf, cap, (int32_t)(s % 7), -1, name,
                                         (uint16_t)(1000 + s % 100));
    case 1: {
        memcpy(id, &s, sizeof(s));
        id[15] = 1;
        snprintf(name, sizeof(name), "t%" PRIu64, s);
        char v[32];
        snprintf(v, sizeof(v), "v%" PRIu64, s);
        const char *k = "cleanup.policy", *vp = v;
        return mi_encode_topic(buf, cap, id, name, &k, &vp, 1);
    }
    case 2: {
        uint64_t t = s - 1;
        memcpy(id, &t, sizeof(t));
        id[15] = 1;
        int32_t reps[3] = {1, 2, 3};
        int32_t leader = (int32_t)(1 + s % 3);
        return mi_encode_partition(buf, cap, id, 0, reps, 3, leader, (int32_t)(s % 1000), &leader,
                                   1);
    }
    default:
        return mi_encode_producer_ids(buf, cap, (int32_t)(s % 3), (int64_t)(s + 1) * 1000);
    }
}

static void reply(int fd, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    line[n++] = '\n';
    if (write(fd, line, (size_t)n) != n)
        _exit(3);
}

static void member_main(const char *dir, int id, const char *voters, int cmd_fd, int resp_fd)
{
    static struct member m;
    pthread_mutex_init(&m.mu, NULL);
    pthread_cond_init(&m.cv, NULL);
    metadata_image_init(&m.img);
    struct quorum_options o = {
        .data_dir = dir,
        .node_id = id,
        .voters = voters,
        .election_timeout_ms = 500,
        .heartbeat_timeout_ms = 50,
        .snapshot_threshold = 64,
        .snapshot_trailing = 16,
        .ctx = &m,
        .apply = m_apply,
        .snapshot = m_snapshot,
        .restore = m_restore,
    };
    struct quorum *q = NULL;
    char err[512] = "";
    int rc = quorum_start(&o, &q, err, sizeof(err));
    if (rc) {
        reply(resp_fd, "err %d %s", rc, err);
        _exit(2);
    }
    reply(resp_fd, "up");
    FILE *in = fdopen(cmd_fd, "r");
    char line[256];
    while (in && fgets(line, sizeof(line), in)) {
        if (line[0] == 'S') {
            struct quorum_status st;
            quorum_status(q, &st);
            pthread_mutex_lock(&m.mu);
            uint64_t digest = metadata_image_digest(&m.img);
            reply(resp_fd,
                  "%d %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                  " %" PRIu64 " %u %" PRIu64,
                  st.is_leader ? 1 : 0, st.leader_id, st.last_applied, m.img.last_index,
                  m.img.records_applied, m.img.chain, digest, st.snapshots_taken,
                  st.snapshots_restored, m.img.topics_count, st.frames_bad);
            pthread_mutex_unlock(&m.mu);
        } else if (line[0] == 'P') {
            uint64_t n = 0, from = 0;
            if (sscanf(line + 1, "%" SCNu64 " %" SCNu64, &n, &from) != 2)
                _exit(4);
            pthread_mutex_lock(&m.mu);
            m.done = m.failed = m.last_err = 0;
            m.first_index = m.last_index = 0;
            pthread_mutex_unlock(&m.mu);
            int64_t t0 = now_ms();
            uint64_t sent = 0;
            for (uint64_t i = 0; i < n; i++) {
                uint8_t rec[512];
                size_t len = test_record(from + i, rec, sizeof(rec));
                if (len == 0)
                    _exit(5);
                int prc;
                while ((prc = quorum_propose(q, rec, len, m_done, &m)) == QUORUM_E_BUSY)
                    usleep(1000);
                if (prc) {
                    m_done(&m, prc, 0);
                }
                sent++;
            }
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_sec += 20;
            pthread_mutex_lock(&m.mu);
            while (m.done < (int)sent)
                if (pthread_cond_timedwait(&m.cv, &m.mu, &dl) == ETIMEDOUT)
                    break;
            int64_t ms = now_ms() - t0;
            if (m.done < (int)sent)
                reply(resp_fd, "err %d timeout", QUORUM_E_TIMEOUT);
            else if (m.failed)
                reply(resp_fd, "err %d %d-failed", m.last_err, m.failed);
            else
                reply(resp_fd, "ok %" PRIu64 " %" PRIu64 " %" PRId64, m.first_index, m.last_index,
                      ms);
            pthread_mutex_unlock(&m.mu);
        } else if (line[0] == 'W') { /* one proposal through quorum_propose_wait */
            uint8_t rec[512];
            size_t len = test_record(3, rec, sizeof(rec));
            uint64_t index = 0;
            rc = quorum_propose_wait(q, rec, len, 5000, &index);
            reply(resp_fd, "%d %" PRIu64, rc, index);
        } else if (line[0] == 'Q') {
            quorum_stop(q);
            reply(resp_fd, "bye");
            _exit(0);
        }
    }
    _exit(0);
}

/* ---- the parent ---- */

struct node {
    pid_t pid;
    int cmd, resp;
    char dir[512];
    char rbuf[4096];
    size_t rlen;
};

static struct node nodes[NODES];
static char voters[256];

static bool read_line(struct node *n, char *out, size_t cap, int timeout_ms)
{
    int64_t dl = now_ms() + timeout_ms;
    for (;;) {
        char *nl = memchr(n->rbuf, '\n', n->rlen);
        if (nl) {
            size_t k = (size_t)(nl - n->rbuf);
            snprintf(out, cap, "%.*s", (int)k, n->rbuf);
            memmove(n->rbuf, nl + 1, n->rlen - k - 1);
            n->rlen -= k + 1;
            return true;
        }
        int64_t left = dl - now_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {n->resp, POLLIN, 0};
        if (poll(&p, 1, (int)left) <= 0)
            continue;
        ssize_t r = read(n->resp, n->rbuf + n->rlen, sizeof(n->rbuf) - n->rlen);
        if (r <= 0)
            return false;
        n->rlen += (size_t)r;
    }
}

/* A member that died on its own fails the test with its wait status. */
static void check_alive(struct node *n)
{
    int ws = 0;
    if (n->pid > 0 && waitpid(n->pid, &ws, WNOHANG) == n->pid) {
        n->pid = 0;
        fail_msg("member in %s died: %s %d", n->dir, WIFSIGNALED(ws) ? "signal" : "exit",
                 WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws));
    }
}

static bool ask(struct node *n, const char *cmd, char *out, size_t cap, int timeout_ms)
{
    if (n->pid <= 0)
        return false;
    bool ok = write(n->cmd, cmd, strlen(cmd)) == (ssize_t)strlen(cmd) &&
              read_line(n, out, cap, timeout_ms);
    if (!ok)
        check_alive(n);
    return ok;
}

static void node_start(int i)
{
    int c[2], r[2];
    assert_int_equal(pipe(c), 0);
    assert_int_equal(pipe(r), 0);
    fflush(stdout); /* a child must not print the parent's buffered lines again */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(c[1]);
        close(r[0]);
        for (int k = 0; k < NODES; k++)
            if (k != i && nodes[k].pid > 0) {
                close(nodes[k].cmd);
                close(nodes[k].resp);
            }
        member_main(nodes[i].dir, i + 1, voters, c[0], r[1]);
    }
    close(c[0]);
    close(r[1]);
    nodes[i].pid = pid;
    nodes[i].cmd = c[1];
    nodes[i].resp = r[0];
    nodes[i].rlen = 0;
    char line[512];
    assert_true(read_line(&nodes[i], line, sizeof(line), 10000));
    if (strcmp(line, "up") != 0)
        fail_msg("member %d: %s", i + 1, line);
}

static void node_kill(int i)
{
    kill(nodes[i].pid, SIGKILL);
    waitpid(nodes[i].pid, NULL, 0);
    close(nodes[i].cmd);
    close(nodes[i].resp);
    nodes[i].pid = 0;
}

struct st {
    int is_leader, leader;
    uint64_t raft_applied, last_index, applied, chain, digest, snaps, restored;
    unsigned topics;
    uint64_t frames_bad;
};

static bool status(int i, struct st *s)
{
    char line[512];
    if (!ask(&nodes[i], "S\n", line, sizeof(line), 5000))
        return false;
    return sscanf(line,
                  "%d %d %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                  " %" SCNu64 " %u %" SCNu64,
                  &s->is_leader, &s->leader, &s->raft_applied, &s->last_index, &s->applied,
                  &s->chain, &s->digest, &s->snaps, &s->restored, &s->topics, &s->frames_bad) == 11;
}

/* Polls until the live members agree on one leader; its index, or -1 after timeout_ms. */
static int wait_leader(int timeout_ms)
{
    int64_t dl = now_ms() + timeout_ms;
    while (now_ms() < dl) {
        int leader = -1, named = 0, live = 0, leaders = 0;
        bool agree = true;
        for (int i = 0; i < NODES; i++) {
            struct st s;
            if (nodes[i].pid <= 0)
                continue;
            live++;
            if (!status(i, &s))
                continue;
            if (s.is_leader) {
                leaders++;
                leader = i;
            }
            if (named == 0)
                named = s.leader;
            else if (named != s.leader)
                agree = false;
        }
        if (leaders == 1 && agree && named == leader + 1 && live > 0)
            return leader;
        usleep(20000);
    }
    return -1;
}

/* Polls until every live member applied through index `at_least` and all agree on the image;
 * false after timeout_ms. */
static bool wait_converged(uint64_t at_least, int timeout_ms, struct st *out)
{
    int64_t dl = now_ms() + timeout_ms;
    while (now_ms() < dl) {
        struct st s[NODES];
        bool ok = true;
        int first = -1;
        for (int i = 0; i < NODES && ok; i++) {
            if (nodes[i].pid <= 0)
                continue;
            ok = status(i, &s[i]) && s[i].last_index >= at_least;
            if (ok && s[i].frames_bad)
                fail_msg("member %d applied %" PRIu64 " entries that are not frames (CQ5)", i + 1,
                         s[i].frames_bad);
            if (ok && first < 0)
                first = i;
            else if (ok)
                ok = s[i].last_index == s[first].last_index && s[i].chain == s[first].chain &&
                     s[i].digest == s[first].digest && s[i].applied == s[first].applied;
        }
        if (ok && first >= 0) {
            if (out)
                *out = s[first];
            return true;
        }
        usleep(20000);
    }
    for (int i = 0; i < NODES; i++) {
        struct st x;
        if (nodes[i].pid > 0 && status(i, &x))
            printf("# member %d: leader %d/%d raft applied %" PRIu64 " image index %" PRIu64
                   " records %" PRIu64 " chain %016" PRIx64 " digest %016" PRIx64
                   " snapshots %" PRIu64 "/%" PRIu64 "\n",
                   i + 1, x.is_leader, x.leader, x.raft_applied, x.last_index, x.applied, x.chain,
                   x.digest, x.snaps, x.restored);
    }
    return false;
}

static uint64_t propose(int i, uint64_t n, uint64_t from, int64_t *ms)
{
    char cmd[64], line[512];
    snprintf(cmd, sizeof(cmd), "P %" PRIu64 " %" PRIu64 "\n", n, from);
    assert_true(ask(&nodes[i], cmd, line, sizeof(line), 30000));
    uint64_t first = 0, last = 0;
    int64_t t = 0;
    if (sscanf(line, "ok %" SCNu64 " %" SCNu64 " %" SCNd64, &first, &last, &t) != 3)
        fail_msg("propose on member %d: %s", i + 1, line);
    assert_true(last >= first + n - 1);
    if (ms)
        *ms = t;
    return last;
}

static uint16_t free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t l = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

/* CQ1..CQ4, MI1, MI3 over three processes. */
static void test_three_members_fail_over(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN); /* a dead member's pipe: the test reports it (check_alive) */
    char *root = tu_mkdtemp();
    int off = 0;
    for (int i = 0; i < NODES; i++) {
        snprintf(nodes[i].dir, sizeof(nodes[i].dir), "%s/n%d", root, i + 1);
        assert_int_equal(mkdir(nodes[i].dir, 0755), 0);
        off += snprintf(voters + off, sizeof(voters) - (size_t)off, "%s%d@127.0.0.1:%u",
                        i ? "," : "", i + 1, (unsigned)free_port());
    }
    for (int i = 0; i < NODES; i++)
        node_start(i);

    /* a leader every member names */
    int64_t t0 = now_ms();
    int leader = wait_leader(20000);
    assert_true(leader >= 0);
    printf("# first election: %" PRId64 " ms\n", now_ms() - t0);

    /* a follower refuses (CQ3) */
    int follower = (leader + 1) % NODES;
    char line[512];
    assert_true(ask(&nodes[follower], "W\n", line, sizeof(line), 10000));
    assert_int_equal(atoi(line), QUORUM_E_NOT_CONTROLLER);

    /* records in the same order everywhere (CQ2, MI1); 1000 small ones for the rate */
    int64_t ms = 0;
    uint64_t committed = propose(leader, 1000, 0, &ms);
    printf("# 1000 records of ~40 bytes committed in %" PRId64 " ms (%.0f records/s)\n", ms,
           ms ? 1000.0 * 1000 / (double)ms : 0.0);
    struct st conv;
    assert_true(wait_converged(committed, 20000, &conv));
    assert_int_equal(conv.applied, 1000);
    assert_true(conv.topics > 0);
    for (int i = 0; i < NODES; i++) { /* threshold 64: snapshots are taken (in the background) */
        struct st s;
        int64_t dl = now_ms() + 20000;
        while (status(i, &s) && s.snaps == 0 && now_ms() < dl)
            usleep(20000);
        if (s.snaps == 0)
            fail_msg("member %d took no snapshot (applied through %" PRIu64 ")", i + 1,
                     s.raft_applied);
    }

    /* SIGKILL the leader: a new one, nothing committed lost, new proposals commit */
    int old = leader;
    node_kill(old);
    t0 = now_ms();
    leader = wait_leader(20000);
    assert_true(leader >= 0);
    assert_int_not_equal(leader, old);
    printf("# election after SIGKILL of the leader: %" PRId64 " ms\n", now_ms() - t0);
    assert_true(wait_converged(committed, 20000, &conv));
    assert_true(conv.applied >= 1000);
    committed = propose(leader, 100, 1000, NULL);
    assert_true(wait_converged(committed, 20000, &conv));

    /* the killed member restarts on its directory: restores its snapshot, catches up (CQ4: no
     * second bootstrap) */
    node_start(old);
    struct st s;
    assert_true(status(old, &s));
    assert_true(s.restored >= 1);
    assert_true(wait_converged(committed, 20000, &conv));
    assert_true(conv.applied >= 1100);
    assert_true(status(old, &s));
    printf("# restarted member: %" PRIu64 " restores\n", s.restored);

    /* a follower stopped cleanly and restarted: the same image from snapshot + log (MI3) */
    follower = (leader + 1) % NODES;
    assert_true(ask(&nodes[follower], "Q\n", line, sizeof(line), 10000));
    assert_string_equal(line, "bye");
    waitpid(nodes[follower].pid, NULL, 0);
    close(nodes[follower].cmd);
    close(nodes[follower].resp);
    nodes[follower].pid = 0;
    node_start(follower);
    assert_true(status(follower, &s));
    assert_true(s.restored >= 1);
    assert_true(wait_converged(committed, 20000, &conv));
    committed = propose(leader, 10, 1100, NULL);
    assert_true(wait_converged(committed, 20000, &conv));

    /* a member down while the leader's log moves past several snapshots: restarted, it is
     * behind the leader's log start and must take the leader's snapshot (InstallSnapshot) */
    follower = (leader + 2) % NODES;
    uint64_t restored_before = 0;
    node_kill(follower);
    committed = propose(leader, 300, 2000, NULL);
    node_start(follower);
    assert_true(status(follower, &s));
    restored_before = s.restored;
    assert_true(wait_converged(committed, 20000, &conv));
    assert_true(status(follower, &s));
    printf("# lagging member: %" PRIu64 " restores at start, %" PRIu64 " after catching up\n",
           restored_before, s.restored);

    /* raft's files are where they are said to be */
    char *p = tu_path("%s/" QUORUM_DIR_NAME "/metadata1", nodes[0].dir);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    free(p);

    for (int i = 0; i < NODES; i++)
        if (nodes[i].pid > 0)
            node_kill(i);
    tu_rmdir_free(root);
}

/* The voters list is validated input (quorum_voters_parse). */
static void test_voters_parse(void **state)
{
    (void)state;
    struct quorum_voter v[QUORUM_VOTERS_MAX];
    int n = 0;
    char err[256];
    const char *ok = "1@127.0.0.1:19091,2@localhost:19092,3@[::1]:19093";
    assert_int_equal(quorum_voters_parse(ok, strlen(ok), v, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 3);
    assert_int_equal(v[1].id, 2);
    assert_string_equal(v[1].host, "localhost");
    assert_int_equal(v[2].port, 19093);
    assert_string_equal(v[2].host, "::1");
    const char *bad[] = {"",       "1@h:1,",   "0@h:1",     "x@h:1",           "1@:1",
                         "1@h",    "1@h:0",    "1@h:65536", "1@h:1,1@g:2",     "1@h:1,2@h:1",
                         "1@h:1a", "1@[::1:5", "1@h h:1",   "12345678901@h:1", ",1@h:1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(quorum_voters_parse(bad[i], strlen(bad[i]), v, &n, err, sizeof(err)),
                         QUORUM_E_INVALID);
        assert_true(strncmp(err, "voters: entry ", 14) == 0);
    }
    char many[512] = "";
    for (int i = 1; i <= 17; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s%d@h:%d", i > 1 ? "," : "", i,
                 i);
    assert_int_equal(quorum_voters_parse(many, strlen(many), v, &n, err, sizeof(err)),
                     QUORUM_E_INVALID);
}

/* quorum_start refuses a node id outside the voters, with a message. */
static void test_start_refuses(void **state)
{
    (void)state;
    char *root = tu_mkdtemp();
    struct member m;
    struct quorum_options o = {.data_dir = root,
                               .node_id = 4,
                               .voters = "1@127.0.0.1:1",
                               .ctx = &m,
                               .apply = m_apply,
                               .snapshot = m_snapshot,
                               .restore = m_restore};
    struct quorum *q = NULL;
    char err[256] = "";
    assert_int_equal(quorum_start(&o, &q, err, sizeof(err)), QUORUM_E_INVALID);
    assert_null(q);
    assert_non_null(strstr(err, "not one of the voters"));
    o.voters = "1@127.0.0.1:1,x";
    assert_int_equal(quorum_start(&o, &q, err, sizeof(err)), QUORUM_E_INVALID);
    tu_rmdir_free(root);
}

/* One voter in this process: elected alone, commits, snapshots, stops; a second start on the same
 * directory restores the snapshot, replays the rest and does not bootstrap again (CQ2, CQ4). Run
 * in-process so that ASan's leak check sees start and stop. */
static void test_single_voter_restart(void **state)
{
    (void)state;
    char *root = tu_mkdtemp();
    char v[64];
    snprintf(v, sizeof(v), "1@127.0.0.1:%u", (unsigned)free_port());
    uint64_t digest = 0, applied = 0;
    for (int round = 0; round < 2; round++) {
        static struct member m;
        pthread_mutex_init(&m.mu, NULL);
        pthread_cond_init(&m.cv, NULL);
        metadata_image_init(&m.img);
        struct quorum_options o = {.data_dir = root,
                                   .node_id = 1,
                                   .voters = v,
                                   .election_timeout_ms = 200,
                                   .heartbeat_timeout_ms = 20,
                                   .snapshot_threshold = 16,
                                   .snapshot_trailing = 4,
                                   .ctx = &m,
                                   .apply = m_apply,
                                   .snapshot = m_snapshot,
                                   .restore = m_restore};
        struct quorum *q = NULL;
        char err[512] = "";
        if (quorum_start(&o, &q, err, sizeof(err)) != 0)
            fail_msg("quorum_start: %s", err);
        struct quorum_status st;
        int64_t dl = now_ms() + 20000;
        do {
            quorum_status(q, &st);
            if (!st.is_leader)
                usleep(10000);
        } while (!st.is_leader && now_ms() < dl);
        assert_true(st.is_leader);
        if (round == 0) {
            uint64_t last = 0;
            for (uint64_t s = 0; s < 40; s++) {
                uint8_t rec[512];
                size_t len = test_record(s, rec, sizeof(rec));
                uint64_t index = 0;
                assert_int_equal(quorum_propose_wait(q, rec, len, 10000, &index), 0);
                assert_true(index > last); /* CQ3: committed indexes grow */
                last = index;
            }
        } else {
            /* the same image once the log after the snapshot is replayed */
            dl = now_ms() + 20000;
            for (;;) {
                pthread_mutex_lock(&m.mu);
                bool same = m.img.records_applied == applied;
                pthread_mutex_unlock(&m.mu);
                if (same || now_ms() > dl)
                    break;
                usleep(10000);
            }
            quorum_status(q, &st);
            assert_true(st.snapshots_restored >= 1);
        }
        pthread_mutex_lock(&m.mu);
        if (round == 0) {
            digest = metadata_image_digest(&m.img);
            applied = m.img.records_applied;
            assert_int_equal(applied, 40);
        } else {
            assert_int_equal(m.img.records_applied, applied);
            assert_int_equal(metadata_image_digest(&m.img), digest);
        }
        pthread_mutex_unlock(&m.mu);
        quorum_stop(q);
        metadata_image_free(&m.img);
        pthread_cond_destroy(&m.cv);
        pthread_mutex_destroy(&m.mu);
    }
    tu_rmdir_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_voters_parse),
        cmocka_unit_test(test_start_refuses),
        /* forks first: the in-process quorum leaves libuv's thread pool running, and a fork
         * of a multi-threaded process is refused by TSan */
        cmocka_unit_test(test_three_members_fail_over),
        cmocka_unit_test(test_single_voter_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
