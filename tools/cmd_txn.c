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
 * `abort` ends a hanging transaction now: the coordinator fences its producer (epoch bump) and
 * writes ABORT markers, which releases the LSO. Opening the engine may itself finish
 * transactions (a Prepare* left by a crash is completed; one past its timeout is aborted by the
 * coordinator's timer), so what `list` shows is the state after open.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define TXN_ID_ARG_MAX_BYTES 1024 /* the coordinator's limit (txn_log.h) */

static void txn_usage(FILE *out)
{
    fprintf(out,
            "usage: ringtail txn list DIR [--all]\n"
            "       ringtail txn abort DIR --transactional-id ID\n"
            "\n"
            "list   prints one line per transactional id with a transaction in flight\n"
            "       (state Ongoing, PrepareCommit, PrepareAbort or PrepareEpochFence), after a\n"
            "       header line, tab-separated:\n"
            "         ID  PRODUCER_ID  EPOCH  STATE  AGE_MS  TIMEOUT_MS  PARTITIONS\n"
            "       PARTITIONS lists each partition of the transaction as TOPIC-N(LSO X):\n"
            "       X is the last stable offset the transaction pins there (read_committed\n"
            "       readers stop before it), or '-' when it pins none. A transaction parked\n"
            "       by check-back shows its state as Ongoing(hanging). Without any open\n"
            "       transaction it prints 'no open transactions in DIR'.\n"
            "  --all                   every transactional id, also Empty and Complete*\n"
            "\n"
            "abort  aborts the open transaction of ID now (for a producer that died or hangs):\n"
            "       its producer is fenced (epoch bump) and ABORT markers are written into\n"
            "       every partition of the transaction, which releases the LSO.\n"
            "  --transactional-id ID   the transactional id (required)\n"
            "\n"
            "Opening DIR finishes what the coordinator can finish by itself: a transaction\n"
            "left between its two phases is completed, and one older than its timeout is\n"
            "aborted by the coordinator's timer.\n"
            "\n"
            "Exit status: 0 success, 1 failure (no such id, nothing open to abort, directory\n"
            "missing or locked), 2 usage error.\n");
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

static int txn_list(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"all", no_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool all = false;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'a':
            all = true;
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
    if (argc - optind < 1)
        return cli_usage("txn", "list: missing DIR");
    if (argc - optind > 1)
        return cli_usage("txn", "list: unexpected argument '%s'", argv[optind + 1]);
    const char *dir = argv[optind];

    rt_engine *engine = NULL;
    int ex = cli_engine_open_read_only("txn", dir, &engine);
    if (ex != CLI_EXIT_OK)
        return ex;
    struct txn_rows rs = {.all = all};
    int rc = list_rows(engine, &rs);
    if (rc != 0) {
        ex = cli_fail_rt("txn", rc, "list: %s", dir);
        rows_free(&rs);
        rt_close(engine);
        return ex;
    }
    if (rs.count == 0) {
        printf("no %stransactions in %s\n", all ? "" : "open ", dir);
    } else {
        printf("ID\tPRODUCER_ID\tEPOCH\tSTATE\tAGE_MS\tTIMEOUT_MS\tPARTITIONS\n");
        for (size_t i = 0; i < rs.count; i++) {
            const struct txn_row *r = &rs.rows[i];
            printf("%s\t%" PRId64 "\t%d\t%s\t%" PRId64 "\t%" PRId32 "\t%s\n", r->id, r->producer_id,
                   (int)r->epoch, r->state, r->age_ms, r->timeout_ms, r->partitions);
        }
    }
    rows_free(&rs);
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

static int txn_abort(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"transactional-id", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *id = NULL;
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
        case 'h':
            txn_usage(stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage("txn", "abort: option %s needs a value", argv[optind - 1]);
        default:
            return cli_usage("txn", "abort: unknown option %s", argv[optind - 1]);
        }
    }
    if (argc - optind < 1)
        return cli_usage("txn", "abort: missing DIR");
    if (argc - optind > 1)
        return cli_usage("txn", "abort: unexpected argument '%s'", argv[optind + 1]);
    if (!id)
        return cli_usage("txn", "abort: missing --transactional-id ID");
    const char *dir = argv[optind];

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
