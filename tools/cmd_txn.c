/*
 * cmd_txn.c — `ringtail txn list DIR [--all]` and `ringtail txn abort DIR --transactional-id ID`:
 * operator tooling for transactions, over rt_txn_list and rt_txn_abort.
 *
 * `list` shows what the coordinator knows of each transactional id: its producer id and epoch,
 * its state, how long its open transaction has been running, the partitions it spans and, per
 * partition, the last stable offset the transaction holds back (a read_committed reader sees
 * nothing at or after it until the transaction ends). By default only ids with a transaction in
 * flight (not Empty, CompleteCommit or CompleteAbort) are printed; --all prints every id. The
 * rows are sorted by id so the output is stable; rt_txn_list's pointers live only for its
 * callback, so each row is copied.
 *
 * After the ids, `list` shows every partition a transaction still pins that no live
 * transaction of the coordinator will end (rt_txn_list_partitions: e.g. the coordinator's state
 * was lost), with the producer id and epoch `abort --topic --partition --producer-id` needs.
 *
 * `abort` ends a hanging transaction now: by transactional id, the coordinator fences its
 * producer (epoch bump) and writes ABORT markers, which releases the LSO; by partition and
 * producer id (Kafka's `kafka-transactions.sh abort --topic --partition --producer-id`), over
 * rt_txn_abort_partition, an ABORT marker goes into that partition (or, when the coordinator
 * holds the transaction open, it is aborted everywhere as by id). Opening the engine may itself
 * finish transactions (a Prepare* left by a crash is completed; a partition's transaction the
 * coordinator completed gets its marker again, COR1-COR5 in
 * engine/txn/coordinator_reconcile.c; one past its timeout is aborted by the coordinator's
 * timer), so what `list` shows is the state after open.
 *
 * With --bootstrap HOST:PORT[,...] instead of DIR, both ask a running broker or cluster over the
 * wire (cmd_txn_cluster.c). A cluster node's directory (it holds `__cluster_metadata/`) is
 * refused in directory mode unless --force (TXN1).
 *
 * Invariants:
 *   TXN1  Directory mode never opens a directory that holds `__cluster_metadata/` (a cluster
 *         node's, docs/cluster.md §7.6) without --force: the engine opened there has no marker
 *         writer, the image or the leaderships, so opening it (which completes Prepare*
 *         transactions) or an abort would write markers into the local copy of partitions the
 *         node may only follow, and the replicas would disagree. It exits 1 naming --bootstrap.
 */
#include <errno.h>
#include <getopt.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "meta.h" /* meta_topic_name_valid: the rule rt_topic_create enforces, checked up front */

#define TXN_ID_ARG_MAX_BYTES   1024 /* the coordinator's limit (txn_log.h) */
#define TXN_TIMEOUT_MS_DEFAULT 5000 /* --bootstrap: each request's bound */

static void txn_usage(FILE *out)
{
    fprintf(out,
            "usage: ringtail txn list DIR [--all] [--force]\n"
            "       ringtail txn abort DIR --transactional-id ID [--force]\n"
            "       ringtail txn abort DIR --topic T --partition P --producer-id ID\n"
            "                              [--producer-epoch E] [--force]\n"
            "       ringtail txn list --bootstrap HOST:PORT[,...] [--all] [--timeout-ms N]\n"
            "       ringtail txn abort --bootstrap HOST:PORT[,...] --transactional-id ID\n"
            "       ringtail txn abort --bootstrap HOST:PORT[,...] ID   (the same)\n"
            "       ringtail txn abort --bootstrap HOST:PORT[,...] --topic T --partition P\n"
            "                              --producer-id ID [--producer-epoch E] [--force]\n"
            "\n"
            "list   prints one line per transactional id with a transaction in flight\n"
            "       (state Ongoing, PrepareCommit, PrepareAbort or PrepareEpochFence), after a\n"
            "       header line, tab-separated:\n"
            "         ID  PRODUCER_ID  EPOCH  STATE  AGE_MS  TIMEOUT_MS  PARTITIONS\n"
            "       PARTITIONS lists each partition of the transaction as TOPIC-N(LSO X):\n"
            "       X is the last stable offset the transaction pins there (read_committed\n"
            "       readers stop before it), or '-' when it pins none. A transaction parked\n"
            "       by check-back shows its state as Ongoing(hanging).\n"
            "       Then, after a line 'pinned partitions with no live transaction:' and a\n"
            "       header line, one line per partition whose LSO a transaction holds back\n"
            "       that no live transaction of the coordinator will end:\n"
            "         TOPIC  PARTITION  PRODUCER_ID  EPOCH  FIRST_OFFSET  LSO  HW  ID  STATE\n"
            "       (ID and STATE: the transactional id holding that producer id and its\n"
            "       state, '-' when none); release each with abort --topic --partition\n"
            "       --producer-id. Without either kind it prints 'no open transactions in DIR'.\n"
            "  --all                   every transactional id, also Empty and Complete*\n"
            "\n"
            "abort  --transactional-id: aborts the open transaction of ID now (for a producer\n"
            "       that died or hangs): its producer is fenced (epoch bump) and ABORT markers\n"
            "       are written into every partition of the transaction, which releases the LSO.\n"
            "       --topic/--partition/--producer-id (as Kafka's kafka-transactions.sh abort):\n"
            "       writes an ABORT marker of that producer into that partition, which releases\n"
            "       its LSO; a transaction the coordinator holds open is aborted everywhere.\n"
            "  --transactional-id ID   the transactional id\n"
            "  --topic T               the pinned partition's topic\n"
            "  --partition P           ... and partition\n"
            "  --producer-id ID        the producer id 'txn list' shows for it\n"
            "  --producer-epoch E      its epoch there (default: whatever it is)\n"
            "\n"
            "Opening DIR finishes what the coordinator can finish by itself: a transaction\n"
            "left between its two phases is completed, a partition that lost the marker of a\n"
            "transaction the coordinator completed gets it again (one it does not hold open\n"
            "is aborted), and one older than its timeout is aborted by the coordinator's timer.\n"
            "\n"
            "DIR must not be a cluster node's directory (one holding __cluster_metadata/):\n"
            "the engine opened there writes markers into its local copy of partitions the\n"
            "node may only follow. It is refused unless --force; use --bootstrap instead.\n"
            "\n"
            "--bootstrap HOST:PORT[,...]: a running broker or cluster, asked over the wire\n"
            "(the first address that answers names the nodes; no DIR):\n"
            "list   asks every node ListTransactions (each lists what it coordinates), the\n"
            "       coordinator DescribeTransactions, every partition's leader\n"
            "       DescribeProducers; prints the same sections as above with a COORDINATOR\n"
            "       column (the node) before PARTITIONS, LSO X being the first offset of the\n"
            "       transaction's open part there; pinned partitions also show their leader\n"
            "       ('?': an offset the leader did not answer):\n"
            "         TOPIC  PARTITION  PRODUCER_ID  EPOCH  FIRST_OFFSET  LSO  HW  LEADER  ID\n"
            "         STATE\n"
            "       A node that does not answer is named on stderr and the exit status is 1\n"
            "       (the view printed is incomplete).\n"
            "abort  --transactional-id: InitProducerId for ID at its coordinator: the producer\n"
            "       is fenced (epoch bump) and ABORT markers go to every partition of the\n"
            "       transaction, wherever it is led.\n"
            "       --topic/--partition/--producer-id (kafka-transactions.sh abort): the\n"
            "       producer's epoch from DescribeProducers at the partition's leader, then\n"
            "       WriteTxnMarkers ABORT to that leader (CLUSTER_ACTION when the cluster runs\n"
            "       an authorizer). Refused while a coordinator holds that producer's\n"
            "       transaction open with the partition (abort it by --transactional-id), or\n"
            "       when a node does not answer; --force writes the marker anyway.\n"
            "  --timeout-ms N          bounds each request (5000)\n"
            "\n"
            "Exit status: 0 success, 1 failure (no such id or partition, nothing open to\n"
            "abort, wrong epoch, directory missing or locked, a cluster node's directory, a\n"
            "node not answering), 2 usage error.\n");
}

/* TXN1: CLI_EXIT_OK when dir may be opened (not a cluster node's, or --force). */
static int refuse_cluster_dir(const char *sub, const char *dir, bool force)
{
    char path[4096];
    struct stat st;
    int n = snprintf(path, sizeof path, "%s/__cluster_metadata", dir);
    if (force || n < 0 || (size_t)n >= sizeof path || stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return CLI_EXIT_OK;
    return cli_fail("txn",
                    "%s: %s is a cluster node's directory (it holds __cluster_metadata/): opening "
                    "it here would write transaction markers into this node's copy only; ask the "
                    "running cluster with --bootstrap HOST:PORT (--force opens it anyway)",
                    sub, dir);
}

/* ---- list ---- */

struct txn_row {
    char *id;
    int64_t producer_id;
    int16_t epoch;
    char state[40];
    int64_t age_ms;
    int32_t timeout_ms;
    char *partitions; /* "t-0(LSO 3), t-1(LSO -)" */
};

struct txn_rows {
    struct txn_row *rows;
    size_t count;
    size_t cap;
    bool all;
    bool oom;
};

static bool state_is_open(const char *state)
{
    return strcmp(state, "Empty") != 0 && strcmp(state, "CompleteCommit") != 0 &&
           strcmp(state, "CompleteAbort") != 0 && strcmp(state, "Dead") != 0;
}

/* The partitions of txn as one string (malloc'd), or NULL when out of memory. */
static char *format_partitions(const struct rt_txn_info *txn)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    if (txn->partition_count == 0)
        fputc('-', f);
    for (uint32_t i = 0; i < txn->partition_count; i++) {
        fprintf(f, "%s%s-%" PRIu32, i ? ", " : "", txn->partition_topics[i], txn->partition_ids[i]);
        if (txn->pinned_lso && txn->pinned_lso[i] >= 0)
            fprintf(f, "(LSO %" PRId64 ")", txn->pinned_lso[i]);
        else
            fputs("(LSO -)", f);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int collect_txn(void *ctx, const struct rt_txn_info *txn)
{
    struct txn_rows *rs = ctx;
    const char *state = txn->state ? txn->state : "?";
    if (!rs->all && !state_is_open(state))
        return 0;
    if (rs->count == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 16;
        struct txn_row *n = realloc(rs->rows, cap * sizeof *n);
        if (!n) {
            rs->oom = true;
            return 1;
        }
        rs->rows = n;
        rs->cap = cap;
    }
    struct txn_row *r = &rs->rows[rs->count];
    *r = (struct txn_row){.producer_id = txn->producer_id,
                          .epoch = txn->epoch,
                          .age_ms = txn->age_ms,
                          .timeout_ms = txn->timeout_ms};
    snprintf(r->state, sizeof r->state, "%s%s", state, txn->hanging ? "(hanging)" : "");
    r->id = strdup(txn->transactional_id ? txn->transactional_id : "");
    r->partitions = format_partitions(txn);
    if (!r->id || !r->partitions) {
        free(r->id);
        free(r->partitions);
        rs->oom = true;
        return 1;
    }
    rs->count++;
    return 0;
}

static int row_cmp(const void *a, const void *b)
{
    const struct txn_row *x = a, *y = b;
    return strcmp(x->id, y->id);
}

static void rows_free(struct txn_rows *rs)
{
    for (size_t i = 0; i < rs->count; i++) {
        free(rs->rows[i].id);
        free(rs->rows[i].partitions);
    }
    free(rs->rows);
    rs->rows = NULL;
    rs->count = rs->cap = 0;
}

/* Runs rt_txn_list into rs. Returns 0 or an engine code (-ENOMEM when a copy failed). */
static int list_rows(rt_engine *engine, struct txn_rows *rs)
{
    int rc = rt_txn_list(engine, collect_txn, rs);
    if (rs->oom)
        return -ENOMEM;
    if (rc == 0 && rs->count > 1)
        qsort(rs->rows, rs->count, sizeof *rs->rows, row_cmp);
    return rc;
}

/* ---- pinned partitions (rt_txn_list_partitions) ---- */

struct pinned_row {
    char *topic;
    uint32_t partition;
    int64_t producer_id;
    int16_t epoch;
    int64_t first_offset, lso, hw;
    char *id;    /* NULL: no transactional id holds the producer id */
    char *state; /* that id's state, or NULL */
};

struct pinned_rows {
    struct pinned_row *rows;
    size_t count, cap;
    bool live_too; /* also transactions the coordinator holds open */
    bool oom;
};

static int collect_pinned(void *ctx, const struct rt_partition_txn *t)
{
    struct pinned_rows *ps = ctx;
    if (t->live && !ps->live_too)
        return 0;
    if (ps->count == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 16;
        struct pinned_row *n = realloc(ps->rows, cap * sizeof *n);
        if (!n) {
            ps->oom = true;
            return 1;
        }
        ps->rows = n;
        ps->cap = cap;
    }
    struct pinned_row *r = &ps->rows[ps->count];
    *r = (struct pinned_row){.partition = t->partition,
                             .producer_id = t->producer_id,
                             .epoch = t->producer_epoch,
                             .first_offset = t->first_offset,
                             .lso = t->last_stable_offset,
                             .hw = t->high_watermark};
    r->topic = strdup(t->topic);
    r->id = t->transactional_id ? strdup(t->transactional_id) : NULL;
    r->state = t->coordinator_state ? strdup(t->coordinator_state) : NULL;
    if (!r->topic || (t->transactional_id && !r->id) || (t->coordinator_state && !r->state)) {
        free(r->topic);
        free(r->id);
        free(r->state);
        ps->oom = true;
        return 1;
    }
    ps->count++;
    return 0;
}

static int pinned_cmp(const void *a, const void *b)
{
    const struct pinned_row *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    if (c)
        return c;
    if (x->partition != y->partition)
        return x->partition < y->partition ? -1 : 1;
    return x->producer_id < y->producer_id ? -1 : x->producer_id > y->producer_id;
}

static void pinned_free(struct pinned_rows *ps)
{
    for (size_t i = 0; i < ps->count; i++) {
        free(ps->rows[i].topic);
        free(ps->rows[i].id);
        free(ps->rows[i].state);
    }
    free(ps->rows);
    ps->rows = NULL;
    ps->count = ps->cap = 0;
}

static int list_pinned(rt_engine *engine, struct pinned_rows *ps)
{
    int rc = rt_txn_list_partitions(engine, collect_pinned, ps);
    if (ps->oom)
        return -ENOMEM;
    if (rc == 0 && ps->count > 1)
        qsort(ps->rows, ps->count, sizeof *ps->rows, pinned_cmp);
    return rc;
}

static int txn_list(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"all", no_argument, NULL, 'a'},
        {"bootstrap", required_argument, NULL, 'b'},
        {"timeout-ms", required_argument, NULL, 'w'},
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool all = false, force = false;
    const char *bootstrap = NULL;
    uint32_t timeout_ms = TXN_TIMEOUT_MS_DEFAULT;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'a':
            all = true;
            break;
        case 'b':
            if (!txn_cluster_bootstrap_valid(optarg))
                return cli_usage("txn", "list: --bootstrap '%s' is not HOST:PORT[,...]", optarg);
            bootstrap = optarg;
            break;
        case 'w':
            if (!cli_parse_u32(optarg, 1, 600000, &timeout_ms))
                return cli_usage("txn", "list: --timeout-ms needs 1..600000, not '%s'", optarg);
            break;
        case 'f':
            force = true;
            break;
        case 'h':
            txn_usage(stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage("txn", "list: option %s needs a value", argv[optind - 1]);
        default:
            return cli_usage("txn", "list: unknown option %s", argv[optind - 1]);
        }
    }
    if (bootstrap) {
        if (argc - optind > 0)
            return cli_usage("txn", "list: --bootstrap takes no DIR ('%s')", argv[optind]);
        return txn_cluster_list(bootstrap, all, (int)timeout_ms);
    }
    if (argc - optind < 1)
        return cli_usage("txn", "list: missing DIR (or --bootstrap HOST:PORT)");
    if (argc - optind > 1)
        return cli_usage("txn", "list: unexpected argument '%s'", argv[optind + 1]);
    const char *dir = argv[optind];
    int ex = refuse_cluster_dir("list", dir, force); /* TXN1 */
    if (ex != CLI_EXIT_OK)
        return ex;

    rt_engine *engine = NULL;
    ex = cli_engine_open_read_only("txn", dir, &engine);
    if (ex != CLI_EXIT_OK)
        return ex;
    struct txn_rows rs = {.all = all};
    struct pinned_rows ps = {0};
    int rc = list_rows(engine, &rs);
    if (rc == 0)
        rc = list_pinned(engine, &ps);
    if (rc != 0) {
        ex = cli_fail_rt("txn", rc, "list: %s", dir);
        rows_free(&rs);
        pinned_free(&ps);
        rt_close(engine);
        return ex;
    }
    if (rs.count == 0 && ps.count == 0) {
        printf("no %stransactions in %s\n", all ? "" : "open ", dir);
    } else if (rs.count > 0) {
        printf("ID\tPRODUCER_ID\tEPOCH\tSTATE\tAGE_MS\tTIMEOUT_MS\tPARTITIONS\n");
        for (size_t i = 0; i < rs.count; i++) {
            const struct txn_row *r = &rs.rows[i];
            printf("%s\t%" PRId64 "\t%d\t%s\t%" PRId64 "\t%" PRId32 "\t%s\n", r->id, r->producer_id,
                   (int)r->epoch, r->state, r->age_ms, r->timeout_ms, r->partitions);
        }
    }
    if (ps.count > 0) {
        printf("pinned partitions with no live transaction:\n");
        printf("TOPIC\tPARTITION\tPRODUCER_ID\tEPOCH\tFIRST_OFFSET\tLSO\tHW\tID\tSTATE\n");
        for (size_t i = 0; i < ps.count; i++) {
            const struct pinned_row *r = &ps.rows[i];
            printf("%s\t%" PRIu32 "\t%" PRId64 "\t%d\t%" PRId64 "\t%" PRId64 "\t%" PRId64
                   "\t%s\t%s\n",
                   r->topic, r->partition, r->producer_id, (int)r->epoch, r->first_offset, r->lso,
                   r->hw, r->id ? r->id : "-", r->state ? r->state : "-");
        }
    }
    rows_free(&rs);
    pinned_free(&ps);
    if (fflush(stdout) != 0) {
        rt_close(engine);
        return cli_fail("txn", "list: writing stdout failed");
    }
    return cli_engine_close("txn", engine);
}

/* ---- abort ---- */

/* The row of one id (copied), for reporting what abort did. */
struct find_one {
    const char *id;
    struct txn_rows rs;
};

static int find_txn(void *ctx, const struct rt_txn_info *txn)
{
    struct find_one *fo = ctx;
    if (!txn->transactional_id || strcmp(txn->transactional_id, fo->id) != 0)
        return 0;
    int rc = collect_txn(&fo->rs, txn);
    return rc ? rc : 1; /* found: stop */
}

/* Looks id up; returns 0 with *row_out (NULL when the coordinator does not know it). */
static int find_row(rt_engine *engine, const char *id, struct find_one *fo,
                    const struct txn_row **row_out)
{
    rows_free(&fo->rs);
    *fo = (struct find_one){.id = id, .rs = {.all = true}};
    int rc = rt_txn_list(engine, find_txn, fo);
    if (fo->rs.oom)
        return -ENOMEM;
    if (rc == 1)
        rc = 0;
    *row_out = fo->rs.count ? &fo->rs.rows[0] : NULL;
    return rc;
}

/* The pinned row of (topic, partition, producer id), live ones included (copied into ps). */
static int find_pinned(rt_engine *engine, const char *topic, uint32_t partition, int64_t pid,
                       struct pinned_rows *ps, const struct pinned_row **row_out)
{
    pinned_free(ps);
    *ps = (struct pinned_rows){.live_too = true};
    int rc = list_pinned(engine, ps);
    *row_out = NULL;
    for (size_t i = 0; rc == 0 && i < ps->count; i++)
        if (ps->rows[i].partition == partition && ps->rows[i].producer_id == pid &&
            strcmp(ps->rows[i].topic, topic) == 0)
            *row_out = &ps->rows[i];
    return rc;
}

/* `txn abort DIR --topic T --partition P --producer-id ID [--producer-epoch E]`. */
static int txn_abort_partition(const char *dir, const char *topic, uint32_t partition, int64_t pid,
                               int16_t epoch)
{
    rt_engine *engine = NULL;
    int ex = cli_engine_open("txn", dir, false, NULL, &engine, NULL);
    if (ex != CLI_EXIT_OK)
        return ex;
    struct pinned_rows ps = {0};
    const struct pinned_row *before = NULL;
    int rc = find_pinned(engine, topic, partition, pid, &ps, &before);
    int64_t lso_before = before ? before->lso : -1;
    if (rc == 0)
        rc = rt_txn_abort_partition(engine, topic, partition, pid, epoch);
    if (rc == RT_E_UNKNOWN_TOPIC_OR_PARTITION)
        ex = cli_fail("txn", "abort: no partition %s-%" PRIu32 " in %s", topic, partition, dir);
    else if (rc == RT_E_INVALID_TXN_STATE)
        ex = cli_fail("txn",
                      "abort: producer %" PRId64 " has no open transaction in %s-%" PRIu32 " of %s",
                      pid, topic, partition, dir);
    else if (rc != 0)
        ex = cli_fail_rt("txn", rc, "abort: producer %" PRId64 " in %s-%" PRIu32 " of %s", pid,
                         topic, partition, dir);
    if (rc == 0) {
        int64_t lso = -1;
        (void)rt_list_offsets(engine, topic, partition, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso);
        printf("aborted the transaction of producer %" PRId64 " in %s-%" PRIu32 " (LSO %" PRId64
               " -> %" PRId64 ")\n",
               pid, topic, partition, lso_before, lso);
    }
    pinned_free(&ps);
    if (fflush(stdout) != 0 && ex == CLI_EXIT_OK)
        ex = cli_fail("txn", "abort: writing stdout failed");
    int close_ex = cli_engine_close("txn", engine);
    return ex == CLI_EXIT_OK ? close_ex : ex;
}

static int txn_abort(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"transactional-id", required_argument, NULL, 't'},
        {"topic", required_argument, NULL, 'T'},
        {"partition", required_argument, NULL, 'P'},
        {"producer-id", required_argument, NULL, 'I'},
        {"producer-epoch", required_argument, NULL, 'E'},
        {"bootstrap", required_argument, NULL, 'b'},
        {"timeout-ms", required_argument, NULL, 'w'},
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *bootstrap = NULL;
    uint32_t timeout_ms = TXN_TIMEOUT_MS_DEFAULT;
    bool force = false;
    const char *id = NULL;
    const char *topic = NULL;
    uint32_t partition = 0, epoch_u = 0;
    int64_t producer_id = -1;
    bool have_partition = false, have_pid = false, have_epoch = false;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (!*optarg || strlen(optarg) > TXN_ID_ARG_MAX_BYTES)
                return cli_usage("txn", "abort: --transactional-id needs 1..%d bytes",
                                 TXN_ID_ARG_MAX_BYTES);
            id = optarg;
            break;
        case 'T':
            if (!meta_topic_name_valid(optarg))
                return cli_usage("txn", "abort: --topic '%s' is not a valid topic name", optarg);
            topic = optarg;
            break;
        case 'P':
            if (!cli_parse_u32(optarg, 0, UINT32_MAX, &partition))
                return cli_usage("txn", "abort: --partition needs a partition number, not '%s'",
                                 optarg);
            have_partition = true;
            break;
        case 'I':
            if (!cli_parse_i64(optarg, &producer_id) || producer_id < 0)
                return cli_usage("txn", "abort: --producer-id needs a producer id >= 0, not '%s'",
                                 optarg);
            have_pid = true;
            break;
        case 'E':
            if (!cli_parse_u32(optarg, 0, INT16_MAX, &epoch_u))
                return cli_usage("txn", "abort: --producer-epoch needs 0..%d, not '%s'", INT16_MAX,
                                 optarg);
            have_epoch = true;
            break;
        case 'b':
            if (!txn_cluster_bootstrap_valid(optarg))
                return cli_usage("txn", "abort: --bootstrap '%s' is not HOST:PORT[,...]", optarg);
            bootstrap = optarg;
            break;
        case 'w':
            if (!cli_parse_u32(optarg, 1, 600000, &timeout_ms))
                return cli_usage("txn", "abort: --timeout-ms needs 1..600000, not '%s'", optarg);
            break;
        case 'f':
            force = true;
            break;
        case 'h':
            txn_usage(stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage("txn", "abort: option %s needs a value", argv[optind - 1]);
        default:
            return cli_usage("txn", "abort: unknown option %s", argv[optind - 1]);
        }
    }
    if (bootstrap && argc - optind == 1 && !id) { /* `abort --bootstrap B ID` */
        if (!*argv[optind] || strlen(argv[optind]) > TXN_ID_ARG_MAX_BYTES)
            return cli_usage("txn", "abort: a transactional id needs 1..%d bytes",
                             TXN_ID_ARG_MAX_BYTES);
        id = argv[optind++];
    }
    if (bootstrap && argc - optind > 0)
        return cli_usage("txn", "abort: --bootstrap takes no DIR ('%s')", argv[optind]);
    if (!bootstrap && argc - optind < 1)
        return cli_usage("txn", "abort: missing DIR (or --bootstrap HOST:PORT)");
    if (argc - optind > 1)
        return cli_usage("txn", "abort: unexpected argument '%s'", argv[optind + 1]);
    bool by_partition = topic || have_partition || have_pid || have_epoch;
    if (id && by_partition)
        return cli_usage("txn", "abort: --transactional-id or --topic/--partition/--producer-id, "
                                "not both");
    if (!id && !by_partition)
        return cli_usage("txn", "abort: missing --transactional-id ID (or --topic T --partition "
                                "P --producer-id ID)");
    if (by_partition && (!topic || !have_partition || !have_pid))
        return cli_usage("txn", "abort: --topic, --partition and --producer-id go together");
    if (bootstrap && by_partition)
        return txn_cluster_abort_partition(bootstrap, topic, partition, producer_id,
                                           have_epoch ? (int16_t)epoch_u : (int16_t)-1, force,
                                           (int)timeout_ms);
    if (bootstrap)
        return txn_cluster_abort_id(bootstrap, id, (int)timeout_ms);
    const char *dir = argv[optind];
    int refused = refuse_cluster_dir("abort", dir, force); /* TXN1 */
    if (refused != CLI_EXIT_OK)
        return refused;
    if (by_partition)
        return txn_abort_partition(dir, topic, partition, producer_id,
                                   have_epoch ? (int16_t)epoch_u : (int16_t)-1);

    rt_engine *engine = NULL;
    int ex = cli_engine_open("txn", dir, false, NULL, &engine, NULL);
    if (ex != CLI_EXIT_OK)
        return ex;
    struct find_one fo = {0};
    const struct txn_row *before = NULL;
    int rc = find_row(engine, id, &fo, &before);
    if (rc != 0) {
        ex = cli_fail_rt("txn", rc, "abort: listing transactions in %s", dir);
        goto out;
    }
    if (!before) {
        ex = cli_fail("txn", "abort: no transactional id '%s' in %s", id, dir);
        goto out;
    }
    char *what = strdup(before->partitions);
    int64_t pid = before->producer_id;
    int epoch = before->epoch;
    char state[sizeof before->state];
    memcpy(state, before->state, sizeof state);
    rc = rt_txn_abort(engine, id);
    if (rc != 0) {
        if (rc == RT_E_UNKNOWN_PRODUCER_ID)
            ex = cli_fail("txn", "abort: no transactional id '%s' in %s", id, dir);
        else if (rc == RT_E_INVALID_TXN_STATE)
            ex = cli_fail("txn",
                          "abort: transactional id '%s' in %s has no open transaction "
                          "(state %s)",
                          id, dir, state);
        else
            ex = cli_fail_rt("txn", rc, "abort: transactional id '%s' in %s", id, dir);
        free(what);
        goto out;
    }
    const struct txn_row *after = NULL;
    rc = find_row(engine, id, &fo, &after);
    if (rc == 0 && after)
        printf("aborted the transaction of '%s' (producer %" PRId64 ", epoch %d, %s; "
               "partitions %s); now producer %" PRId64 " epoch %d, %s\n",
               id, pid, epoch, state, what ? what : "?", after->producer_id, (int)after->epoch,
               after->state);
    else
        printf("aborted the transaction of '%s' (producer %" PRId64 ", epoch %d, %s; "
               "partitions %s)\n",
               id, pid, epoch, state, what ? what : "?");
    free(what);
out:
    rows_free(&fo.rs);
    if (fflush(stdout) != 0 && ex == CLI_EXIT_OK)
        ex = cli_fail("txn", "abort: writing stdout failed");
    {
        int close_ex = cli_engine_close("txn", engine);
        if (ex == CLI_EXIT_OK)
            ex = close_ex;
    }
    return ex;
}

int cmd_txn(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage("txn", "missing subcommand: list or abort");
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
        txn_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(sub, "list") == 0)
        return txn_list(argc - 1, argv + 1);
    if (strcmp(sub, "abort") == 0)
        return txn_abort(argc - 1, argv + 1);
    return cli_usage("txn", "unknown subcommand '%s' (list or abort)", sub);
}
