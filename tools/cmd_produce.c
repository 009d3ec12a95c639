/*
 * cmd_produce.c — `ringtail produce DIR TOPIC`: one record per stdin line, batched per partition
 * and appended with rt_append.
 *
 * Placement follows a Kafka producer with the default partitioner: -p wins; a record with a key
 * goes to toPositive(murmur2(key)) % partitions (murmur2.h); a record without a key joins the
 * current "sticky" partition's batch, and the sticky partition moves on to the next one each
 * time its batch is sent (round-robin per batch). A partition's batch is sent when it holds
 * --batch-records records or about BATCH_TARGET_BYTES bytes, and at end of input.
 *
 * Lines are copied into a per-partition arena (offsets, not pointers, so the arena may grow);
 * nothing is kept after its batch is appended, so memory is bounded by partitions x batch size.
 *
 * With --producer-name NAME the lines go through a named producer (rt_producer_*) instead, each
 * record's sequence id being its 1-based stdin line number: rerunning the same command over the
 * same input after a crash appends every line exactly once (lines the partition already holds
 * are acknowledged as duplicates). Lines without a key (and no -p) are placed by their line
 * number, not by the sticky partitioner: partition (line / RT_NAMED_NULL_KEY_SPAN) % partitions,
 * so a rerun puts each line where the first run did. One line `acked FIRST..LAST` is printed
 * (and flushed) per acknowledged batch; batches hold at most --batch-records lines, as on the
 * other paths.
 *
 * With --txn-id ID the lines go through a transactional producer: rt_producer_init_transactions
 * (which fences an older instance of ID and aborts what it left open), then one transaction per
 * --txn-records lines (all lines when not given): rt_producer_begin, the sends, and
 * rt_producer_commit — or rt_producer_abort with --abort. After each transaction ends the
 * command prints `committed FIRST..LAST` (or `aborted FIRST..LAST`) with 1-based stdin line
 * numbers and flushes stdout, so a script reading the output knows what is durable. A failure
 * inside a transaction aborts it before the command exits, so no LSO is left pinned; a crash
 * leaves it Ongoing until the next init of ID, its timeout, or `ringtail txn abort`.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "murmur2.h"

#define BATCH_TARGET_BYTES    (16u * 1024u)
#define BATCH_RECORDS_DEFAULT 500u
#define BATCH_RECORDS_MAX     100000u
/* Upper bound of a record's framing in RecordBatch v2: length varint (5), attributes (1),
 * timestampDelta varlong (10), offsetDelta varint (5), key and value lengths (5 + 5), header
 * count (5). */
#define RECORD_OVERHEAD_MAX_BYTES 36u
#define BATCH_HEADER_BYTES        61u

struct item {
    size_t key_at;
    int32_t key_len; /* -1 null */
    size_t value_at;
    int32_t value_len;
};

struct pending {
    struct item *items;
    size_t count;
    size_t cap;
    uint8_t *arena;
    size_t arena_used;
    size_t arena_cap;
    size_t estimate_bytes; /* encoded size estimate of the batch so far */
    uint64_t first_line;
};

struct producer {
    rt_engine *engine;
    const char *topic;
    uint32_t partitions;
    uint32_t batch_records_max;
    uint32_t batch_size_max_bytes;
    struct pending *pending; /* one per partition */
    struct rt_record *scratch;
    size_t scratch_cap;
    uint32_t sticky;
    uint64_t records;
    uint64_t batches;
};

static void produce_usage(FILE *out)
{
    fprintf(out,
            "usage: ringtail produce DIR TOPIC [-p N] [--key-sep C] [--sync always|interval|none]\n"
            "                        [--batch-records N]\n"
            "                        [--producer-name NAME | --txn-id ID [--txn-records N]\n"
            "                         [--abort]]\n"
            "\n"
            "Appends one record per line of standard input to TOPIC. The value is the line\n"
            "without its '\\n' (a '\\r' before it is kept); the record timestamp is now.\n"
            "\n"
            "  -p, --partition N     send every record to partition N\n"
            "  -k, --key-sep C       split each line at the first C into KEY C VALUE; a line\n"
            "                        without C has a null key. C is one character, or \\t.\n"
            "  --sync MODE           always (fdatasync before acknowledging, the default),\n"
            "                        interval, or none (page cache only)\n"
            "  --batch-records N     records per batch, at most (default %u; 1..%u); a batch is\n"
            "                        also sent when it reaches about %u KiB\n"
            "  --producer-name NAME  send through the named producer NAME, each record's\n"
            "                        sequence id being its stdin line number (1-based); prints\n"
            "                        'acked FIRST..LAST' per acknowledged batch. Rerunning the\n"
            "                        same input after a crash stores every line exactly once.\n"
            "                        Lines without a key go to partition\n"
            "                        (line / %u) %% partitions (not round-robin), so a rerun\n"
            "                        places each line where the first run did.\n"
            "  --txn-id ID           send through the transactional producer ID, in\n"
            "                        transactions of --txn-records lines; prints\n"
            "                        'committed FIRST..LAST' (stdin line numbers) once each\n"
            "                        transaction is committed. Starting ID fences an older\n"
            "                        instance and aborts what it left open.\n"
            "  --txn-records N       lines per transaction (1..%u; default: all of stdin)\n"
            "  --abort               abort each transaction instead of committing it; prints\n"
            "                        'aborted FIRST..LAST' (read_committed consumers never see\n"
            "                        these records)\n"
            "\n"
            "Without -p, a keyed record goes where Kafka's default partitioner puts it:\n"
            "toPositive(murmur2(key)) %% partitions. Records without a key fill one partition's\n"
            "batch, then the next partition's (round-robin per batch, like Kafka's sticky\n"
            "partitioner), starting at partition 0 (with --producer-name: by line number, as\n"
            "above).\n"
            "\n"
            "At end of input prints one summary line. A line too long for one batch stops the\n"
            "command with an error naming the line; batches sent before it stay appended.\n"
            "Exit status: 0 success, 1 failure, 2 usage error.\n",
            BATCH_RECORDS_DEFAULT, BATCH_RECORDS_MAX, BATCH_TARGET_BYTES / 1024u,
            (unsigned)RT_NAMED_NULL_KEY_SPAN, UINT32_MAX);
}

static int flush_partition(struct producer *pr, uint32_t p)
{
    struct pending *pd = &pr->pending[p];
    if (pd->count == 0)
        return 0;
    if (pr->scratch_cap < pd->count) {
        struct rt_record *n = realloc(pr->scratch, pd->count * sizeof *n);
        if (!n)
            return -ENOMEM;
        pr->scratch = n;
        pr->scratch_cap = pd->count;
    }
    for (size_t i = 0; i < pd->count; i++) {
        const struct item *it = &pd->items[i];
        pr->scratch[i] = (struct rt_record){
            .key = it->key_len >= 0 ? pd->arena + it->key_at : NULL,
            .key_len = it->key_len,
            .value = pd->arena + it->value_at,
            .value_len = it->value_len,
            .timestamp_ms = -1,
            .headers = NULL,
            .header_count = 0,
        };
    }
    int rc = rt_append(pr->engine, pr->topic, p, pr->scratch, pd->count, NULL);
    if (rc != 0) {
        cli_fail_rt("produce", rc, "appending lines %" PRIu64 "..%" PRIu64 " to %s-%" PRIu32,
                    pd->first_line, pd->first_line + pd->count - 1, pr->topic, p);
        return rc;
    }
    pr->records += pd->count;
    pr->batches++;
    pd->count = 0;
    pd->arena_used = 0;
    pd->estimate_bytes = BATCH_HEADER_BYTES;
    if (p == pr->sticky)
        pr->sticky = (pr->sticky + 1) % pr->partitions;
    return 0;
}

static int arena_put(struct pending *pd, const char *bytes, size_t len, size_t *at_out)
{
    if (!pd->arena || pd->arena_used + len > pd->arena_cap) {
        size_t cap = pd->arena_cap ? pd->arena_cap : 4096;
        while (cap < pd->arena_used + len)
            cap *= 2;
        uint8_t *n = realloc(pd->arena, cap);
        if (!n)
            return -ENOMEM;
        pd->arena = n;
        pd->arena_cap = cap;
    }
    if (len)
        memcpy(pd->arena + pd->arena_used, bytes, len);
    *at_out = pd->arena_used;
    pd->arena_used += len;
    return 0;
}

/* Adds one record to partition p's batch, sending the batch first if the record would push it
 * past the size target, and afterwards if it is full by count. A sticky (unkeyed, no -p) record
 * whose partition's batch was just sent follows the sticky partition to the next one. */
static int add_record(struct producer *pr, uint32_t p, bool sticky, const char *key,
                      int32_t key_len, const char *value, int32_t value_len, uint64_t line)
{
    struct pending *pd = &pr->pending[p];
    size_t rec_bytes =
        RECORD_OVERHEAD_MAX_BYTES + (size_t)(key_len > 0 ? key_len : 0) + (size_t)value_len;
    if (pd->count > 0 && pd->estimate_bytes + rec_bytes > BATCH_TARGET_BYTES) {
        int rc = flush_partition(pr, p);
        if (rc != 0)
            return rc;
        if (sticky) {
            p = pr->sticky;
            pd = &pr->pending[p];
        }
    }
    if (pd->count == pd->cap) {
        size_t cap = pd->cap ? pd->cap * 2 : 64;
        struct item *n = realloc(pd->items, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        pd->items = n;
        pd->cap = cap;
    }
    struct item it = {.key_len = key_len, .value_len = value_len};
    if (key_len >= 0 && arena_put(pd, key, (size_t)key_len, &it.key_at) != 0)
        return -ENOMEM;
    if (arena_put(pd, value, (size_t)value_len, &it.value_at) != 0)
        return -ENOMEM;
    if (pd->count == 0)
        pd->first_line = line;
    pd->items[pd->count++] = it;
    pd->estimate_bytes += rec_bytes;
    if (pd->count >= pr->batch_records_max || pd->estimate_bytes >= BATCH_TARGET_BYTES)
        return flush_partition(pr, p);
    return 0;
}

/* ---- --producer-name: the named producer path ---- */

struct named_run {
    rt_producer *producer;
    uint64_t acked;
    uint64_t duplicates;
    uint64_t batches;
    int error;
};

static void named_on_batch(void *ctx, int err, int64_t base_offset, uint32_t records,
                           bool duplicate, void *first, void *last)
{
    (void)base_offset;
    struct named_run *run = ctx;
    if (err) {
        if (!run->error)
            run->error = err;
        return;
    }
    run->batches++;
    run->acked += records;
    if (duplicate)
        run->duplicates += records;
    printf("acked %" PRIu64 "..%" PRIu64 "\n", (uint64_t)(uintptr_t)first,
           (uint64_t)(uintptr_t)last);
    fflush(stdout);
}

static int named_send(struct named_run *run, const char *topic, int32_t partition, const char *key,
                      int32_t key_len, const char *value, int32_t value_len, uint64_t line)
{
    struct rt_producer_message m = {.record = {.key = key,
                                               .key_len = key_len,
                                               .value = value,
                                               .value_len = value_len,
                                               .timestamp_ms = -1},
                                    .sequence = (int64_t)line};
    /* The record ctx carries the line number to named_on_batch. */
    return rt_producer_send(run->producer, topic, partition, &m, NULL, (void *)(uintptr_t)line);
}

/* ---- --txn-id: the transactional producer path ---- */

#define TXN_TIMEOUT_WAIT_MS (-1) /* commit and abort wait as long as the disk needs */
#define TXN_INIT_WAIT_MS    60000

struct txn_run {
    rt_producer *producer;
    const char *id;
    uint32_t records_max; /* lines per transaction; 0 = all of stdin */
    bool abort;           /* end each transaction with rt_producer_abort */
    bool open;            /* a transaction is open */
    uint64_t first_line;  /* of the open transaction */
    uint64_t last_line;
    uint64_t in_txn;  /* lines sent in the open transaction */
    uint64_t ended;   /* transactions committed (or aborted with --abort) */
    uint64_t records; /* lines in those transactions */
};

/* Ends the open transaction as asked (commit, or abort with --abort) and reports it. Returns 0
 * or the engine's code; on a failed commit the caller aborts. */
static int txn_end(struct txn_run *run)
{
    int rc = run->abort ? rt_producer_abort(run->producer, TXN_TIMEOUT_WAIT_MS)
                        : rt_producer_commit(run->producer, TXN_TIMEOUT_WAIT_MS);
    if (rc != 0)
        return rc;
    run->open = false;
    run->ended++;
    run->records += run->in_txn;
    printf("%s %" PRIu64 "..%" PRIu64 "\n", run->abort ? "aborted" : "committed", run->first_line,
           run->last_line);
    fflush(stdout);
    run->in_txn = 0;
    return 0;
}

/* Sends one line inside the current transaction (beginning one if none is open) and ends the
 * transaction when it holds records_max lines. */
static int txn_send(struct txn_run *run, const char *topic, int32_t partition, const char *key,
                    int32_t key_len, const char *value, int32_t value_len, uint64_t line)
{
    if (!run->open) {
        int rc = rt_producer_begin(run->producer);
        if (rc != 0)
            return rc;
        run->open = true;
        run->first_line = line;
        run->in_txn = 0;
    }
    struct rt_producer_message m = {.record = {.key = key,
                                               .key_len = key_len,
                                               .value = value,
                                               .value_len = value_len,
                                               .timestamp_ms = -1},
                                    .sequence = -1};
    int rc = rt_producer_send(run->producer, topic, partition, &m, NULL, NULL);
    if (rc != 0)
        return rc;
    run->last_line = line;
    run->in_txn++;
    if (run->records_max > 0 && run->in_txn >= run->records_max)
        return txn_end(run);
    return 0;
}

/* After a failure: abort the open transaction so it pins no LSO (best effort; a fenced producer
 * cannot, and the coordinator already ended its transaction). */
static void txn_abandon(struct txn_run *run)
{
    if (!run->open)
        return;
    int rc = rt_producer_abort(run->producer, TXN_TIMEOUT_WAIT_MS);
    if (rc == 0)
        fprintf(stderr,
                "ringtail produce: aborted the open transaction of lines %" PRIu64 "..%" PRIu64
                "\n",
                run->first_line, run->last_line);
    else if (run->in_txn > 0)
        cli_fail_rt("produce", rc, "aborting the transaction of lines %" PRIu64 "..%" PRIu64,
                    run->first_line, run->last_line);
    run->open = false;
}

static bool parse_sep(const char *s, char *out)
{
    if (strcmp(s, "\\t") == 0 || strcmp(s, "tab") == 0) {
        *out = '\t';
        return true;
    }
    if (strlen(s) != 1)
        return false;
    *out = s[0];
    return true;
}

/* What the command line asked for. */
struct produce_args {
    struct rt_options opts;
    bool fixed;
    uint32_t fixed_partition;
    bool keyed;
    char sep;
    uint32_t batch_records;
    const char *producer_name;
    const char *txn_id;
    uint32_t txn_records;
    bool txn_abort;
    const char *dir;
    const char *topic;
};

/* Step 1: the options and arguments. Returns CLI_EXIT_OK, or the exit code of a usage error
 * (already reported) — `*help` is set when --help was printed. */
static int produce_parse(int argc, char **argv, struct produce_args *a, bool *help)
{
    static const struct option longopts[] = {
        {"partition", required_argument, NULL, 'p'},
        {"key-sep", required_argument, NULL, 'k'},
        {"sync", required_argument, NULL, 's'},
        {"batch-records", required_argument, NULL, 'b'},
        {"producer-name", required_argument, NULL, 'n'},
        {"txn-id", required_argument, NULL, 't'},
        {"txn-records", required_argument, NULL, 'r'},
        {"abort", no_argument, NULL, 'A'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    cli_options_init(&a->opts);
    a->batch_records = BATCH_RECORDS_DEFAULT;
    bool txn_records_given = false;
    *help = false;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":p:k:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (!cli_parse_u32(optarg, 0, UINT32_MAX - 1, &a->fixed_partition))
                return cli_usage("produce", "-p needs a partition number, not '%s'", optarg);
            a->fixed = true;
            break;
        case 'k':
            if (!parse_sep(optarg, &a->sep))
                return cli_usage("produce", "--key-sep needs one character, not '%s'", optarg);
            a->keyed = true;
            break;
        case 's':
            if (strcmp(optarg, "always") == 0)
                a->opts.sync_mode = RT_SYNC_ALWAYS;
            else if (strcmp(optarg, "interval") == 0)
                a->opts.sync_mode = RT_SYNC_INTERVAL;
            else if (strcmp(optarg, "none") == 0)
                a->opts.sync_mode = RT_SYNC_NONE;
            else
                return cli_usage("produce", "--sync must be always, interval or none, not '%s'",
                                 optarg);
            break;
        case 'b':
            if (!cli_parse_u32(optarg, 1, BATCH_RECORDS_MAX, &a->batch_records))
                return cli_usage("produce", "--batch-records must be 1..%u, not '%s'",
                                 BATCH_RECORDS_MAX, optarg);
            break;
        case 'n':
            if (!*optarg || strlen(optarg) > 249)
                return cli_usage("produce", "--producer-name needs 1..249 characters");
            a->producer_name = optarg;
            break;
        case 't':
            if (!*optarg || strlen(optarg) > 1024)
                return cli_usage("produce", "--txn-id needs 1..1024 bytes");
            a->txn_id = optarg;
            break;
        case 'r':
            if (!cli_parse_u32(optarg, 1, UINT32_MAX, &a->txn_records))
                return cli_usage("produce", "--txn-records must be 1..%u, not '%s'", UINT32_MAX,
                                 optarg);
            txn_records_given = true;
            break;
        case 'A':
            a->txn_abort = true;
            break;
        case 'h':
            produce_usage(stdout);
            *help = true;
            return CLI_EXIT_OK;
        case ':':
            return cli_usage("produce", "option %s needs a value", argv[optind - 1]);
        default:
            return cli_usage("produce", "unknown option %s", argv[optind - 1]);
        }
    }
    if (a->txn_id && a->producer_name)
        return cli_usage("produce", "--txn-id and --producer-name exclude each other: a "
                                    "producer is either named or transactional");
    if (!a->txn_id && txn_records_given)
        return cli_usage("produce", "--txn-records needs --txn-id");
    if (!a->txn_id && a->txn_abort)
        return cli_usage("produce", "--abort needs --txn-id");
    if (argc - optind < 1)
        return cli_usage("produce", "missing DIR");
    if (argc - optind < 2)
        return cli_usage("produce", "missing TOPIC");
    if (argc - optind > 2)
        return cli_usage("produce", "unexpected argument '%s'", argv[optind + 2]);
    a->dir = argv[optind];
    a->topic = argv[optind + 1];
    if (a->topic[0] == '_' && a->topic[1] == '_')
        return cli_fail("produce",
                        "topic '%s' is internal: names beginning with '__' belong to the "
                        "engine (transaction log, consumer offsets) and clients cannot write them",
                        a->topic);
    return CLI_EXIT_OK;
}

/* Step 2: the engine is open; checks the topic and partition, and opens the transactional or
 * named producer the arguments ask for. On failure everything opened here is closed again (the
 * engine too) and the exit code returned. */
static int produce_open(const struct produce_args *a, struct producer *pr, struct named_run *run,
                        struct txn_run *txn)
{
    int rc = rt_topic_describe(pr->engine, a->topic, &pr->partitions);
    if (rc != 0) {
        if (rc == RT_E_UNKNOWN_TOPIC_OR_PARTITION)
            cli_fail("produce", "no topic '%s' in %s", a->topic, a->dir);
        else
            cli_fail_rt("produce", rc, "topic '%s' in %s", a->topic, a->dir);
        rt_close(pr->engine);
        return CLI_EXIT_FAIL;
    }
    if (a->fixed && a->fixed_partition >= pr->partitions) {
        rt_close(pr->engine);
        return cli_usage("produce",
                         "partition %" PRIu32 " does not exist: %s has %" PRIu32
                         " partition%s (0..%" PRIu32 ")",
                         a->fixed_partition, a->topic, pr->partitions,
                         pr->partitions == 1 ? "" : "s", pr->partitions - 1);
    }
    pr->pending = calloc(pr->partitions, sizeof *pr->pending);
    if (!pr->pending) {
        rt_close(pr->engine);
        return cli_fail("produce", "out of memory");
    }
    for (uint32_t p = 0; p < pr->partitions; p++)
        pr->pending[p].estimate_bytes = BATCH_HEADER_BYTES;

    if (a->txn_id) {
        struct rt_producer_options po;
        rt_producer_options_init(&po);
        po.transactional_id = a->txn_id;
        po.batch_records_max = a->batch_records;
        rc = rt_producer_open(pr->engine, &po, &txn->producer);
        if (rc != 0) {
            cli_fail_rt("produce", rc, "opening transactional producer '%s' in %s", a->txn_id,
                        a->dir);
            goto err_free;
        }
        rc = rt_producer_init_transactions(txn->producer, TXN_INIT_WAIT_MS);
        if (rc != 0) {
            cli_fail_rt("produce", rc, "initialising transactional id '%s' in %s", a->txn_id,
                        a->dir);
            rt_producer_close(txn->producer);
            txn->producer = NULL;
            goto err_free;
        }
    } else if (a->producer_name) {
        struct rt_producer_options po;
        rt_producer_options_init(&po);
        po.name = a->producer_name;
        po.on_batch = named_on_batch;
        po.on_batch_ctx = run;
        po.batch_records_max = a->batch_records;
        rc = rt_producer_open(pr->engine, &po, &run->producer);
        if (rc != 0) {
            cli_fail_rt("produce", rc, "opening producer '%s' in %s", a->producer_name, a->dir);
            goto err_free;
        }
    }
    return CLI_EXIT_OK;

err_free:
    free(pr->pending);
    rt_close(pr->engine);
    return CLI_EXIT_FAIL;
}

/* Step 3: every stdin line becomes a record (key before the separator with --key-sep), sent
 * through the transactional or named producer, or batched per partition by hand. Returns
 * CLI_EXIT_OK or the exit code of the first failure (reported). */
static int produce_lines(const struct produce_args *a, struct producer *pr, struct named_run *run,
                         struct txn_run *txn)
{
    /* The largest record that fits alone in a batch the engine accepts. */
    size_t record_max_bytes =
        pr->batch_size_max_bytes > BATCH_HEADER_BYTES + RECORD_OVERHEAD_MAX_BYTES
            ? pr->batch_size_max_bytes - BATCH_HEADER_BYTES - RECORD_OVERHEAD_MAX_BYTES
            : 0;
    int32_t partition = a->fixed ? (int32_t)a->fixed_partition : -1;
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t n;
    uint64_t line_no = 0;
    int result = CLI_EXIT_OK;
    int rc;
    while ((n = getline(&line, &line_cap, stdin)) != -1) {
        line_no++;
        size_t len = (size_t)n;
        if (len > 0 && line[len - 1] == '\n')
            len--;
        const char *key = NULL;
        int32_t key_len = -1;
        const char *value = line;
        size_t value_len = len;
        if (a->keyed) {
            char *at = memchr(line, a->sep, len);
            if (at) {
                key = line;
                key_len = (int32_t)(at - line);
                value = at + 1;
                value_len = len - (size_t)key_len - 1;
            }
        }
        size_t rec_len = value_len + (key_len > 0 ? (size_t)key_len : 0);
        if (rec_len > record_max_bytes) {
            result = cli_fail("produce",
                              "stdin line %" PRIu64 ": %zu bytes do not fit in one batch (at "
                              "most %zu bytes of key and value; batches are limited to %" PRIu32
                              " bytes)",
                              line_no, rec_len, record_max_bytes, pr->batch_size_max_bytes);
            break;
        }
        if (txn->producer) {
            rc = txn_send(txn, a->topic, partition, key, key_len, value, (int32_t)value_len,
                          line_no);
            if (rc != 0) {
                if (txn->open && txn->in_txn > 0 && txn->last_line == line_no)
                    result = cli_fail_rt(
                        "produce", rc, "%s the transaction of stdin lines %" PRIu64 "..%" PRIu64,
                        txn->abort ? "aborting" : "committing", txn->first_line, txn->last_line);
                else
                    result = cli_fail_rt("produce", rc, "stdin line %" PRIu64, line_no);
                break;
            }
            continue;
        }
        if (run->producer) {
            rc = named_send(run, a->topic, partition, key, key_len, value, (int32_t)value_len,
                            line_no);
            if (rc != 0) {
                result = cli_fail_rt("produce", rc, "stdin line %" PRIu64, line_no);
                break;
            }
            continue;
        }
        uint32_t p;
        if (a->fixed)
            p = a->fixed_partition;
        else if (key)
            p = murmur2_partition(key, (size_t)key_len, pr->partitions);
        else
            p = pr->sticky;
        rc = add_record(pr, p, !a->fixed && !key, key, key_len, value, (int32_t)value_len, line_no);
        if (rc != 0) {
            if (rc == -ENOMEM)
                cli_fail("produce", "out of memory at stdin line %" PRIu64, line_no);
            result = CLI_EXIT_FAIL;
            break;
        }
    }
    if (result == CLI_EXIT_OK && ferror(stdin))
        result = cli_fail("produce", "reading stdin: %s", strerror(errno));
    free(line);
    return result;
}

/* Step 4: ends the last transaction, closes the producer, flushes the hand-made batches and
 * closes the engine, keeping the first failure in `result`. */
static int produce_finish(const struct produce_args *a, struct producer *pr, struct named_run *run,
                          struct txn_run *txn, int result)
{
    int rc;
    if (txn->producer) {
        if (result == CLI_EXIT_OK && txn->open) {
            rc = txn_end(txn);
            if (rc != 0)
                result = cli_fail_rt(
                    "produce", rc, "%s the transaction of stdin lines %" PRIu64 "..%" PRIu64,
                    txn->abort ? "aborting" : "committing", txn->first_line, txn->last_line);
        }
        txn_abandon(txn);
        rc = rt_producer_close(txn->producer);
        if (rc != 0 && result == CLI_EXIT_OK)
            result = cli_fail_rt("produce", rc, "transactional producer '%s'", a->txn_id);
        pr->records = txn->records;
        pr->batches = txn->ended;
    }
    if (run->producer) {
        rc = rt_producer_close(run->producer);
        if (rc == 0 && run->error)
            rc = run->error;
        if (rc != 0 && result == CLI_EXIT_OK)
            result = cli_fail_rt("produce", rc, "producer '%s'", a->producer_name);
        pr->records = run->acked - run->duplicates;
        pr->batches = run->batches;
    }
    if (result == CLI_EXIT_OK && !run->producer && !txn->producer) {
        for (uint32_t p = 0; p < pr->partitions; p++) {
            if (flush_partition(pr, p) != 0) {
                result = CLI_EXIT_FAIL;
                break;
            }
        }
    }
    for (uint32_t p = 0; p < pr->partitions; p++) {
        free(pr->pending[p].items);
        free(pr->pending[p].arena);
    }
    free(pr->pending);
    free(pr->scratch);
    int close_ex = cli_engine_close("produce", pr->engine);
    if (result == CLI_EXIT_OK && close_ex != CLI_EXIT_OK)
        result = close_ex;
    return result;
}

/* Step 5: the closing line — what was stored, or what was stored before the error. */
static void produce_report(const struct produce_args *a, const struct producer *pr,
                           const struct named_run *run, const struct txn_run *txn, int result)
{
    if (result == CLI_EXIT_OK && txn->producer)
        printf("%s %" PRIu64 " record%s to %s in %" PRIu64 " transaction%s as transactional id "
               "'%s'\n",
               txn->abort ? "aborted" : "committed", pr->records, pr->records == 1 ? "" : "s",
               a->topic, txn->ended, txn->ended == 1 ? "" : "s", a->txn_id);
    else if (result == CLI_EXIT_OK && run->producer)
        printf("produced %" PRIu64 " new record%s to %s as producer '%s' (%" PRIu64
               " duplicate%s acknowledged, not appended)\n",
               pr->records, pr->records == 1 ? "" : "s", a->topic, a->producer_name,
               run->duplicates, run->duplicates == 1 ? "" : "s");
    else if (result == CLI_EXIT_OK && a->fixed)
        printf("produced %" PRIu64 " record%s to %s (partition %" PRIu32 ") in %" PRIu64
               " batch%s\n",
               pr->records, pr->records == 1 ? "" : "s", a->topic, a->fixed_partition, pr->batches,
               pr->batches == 1 ? "" : "es");
    else if (result == CLI_EXIT_OK)
        printf("produced %" PRIu64 " record%s to %s (%" PRIu32 " partition%s) in %" PRIu64
               " batch%s\n",
               pr->records, pr->records == 1 ? "" : "s", a->topic, pr->partitions,
               pr->partitions == 1 ? "" : "s", pr->batches, pr->batches == 1 ? "" : "es");
    else if (txn->producer && txn->ended > 0)
        fprintf(stderr,
                "ringtail produce: %" PRIu64 " transaction%s (%" PRIu64 " record%s) were %s "
                "before the error\n",
                txn->ended, txn->ended == 1 ? "" : "s", pr->records, pr->records == 1 ? "" : "s",
                txn->abort ? "aborted" : "committed");
    else if (pr->records > 0 && !txn->producer)
        fprintf(stderr,
                "ringtail produce: %" PRIu64 " record%s in %" PRIu64
                " batch%s were appended before the error\n",
                pr->records, pr->records == 1 ? "" : "s", pr->batches,
                pr->batches == 1 ? "" : "es");
}

int cmd_produce(int argc, char **argv)
{
    struct produce_args a;
    bool help;
    int ex = produce_parse(argc, argv, &a, &help);
    if (ex != CLI_EXIT_OK || help)
        return ex;
    struct producer pr = {.topic = a.topic,
                          .batch_records_max = a.batch_records,
                          .batch_size_max_bytes = a.opts.batch_size_max_bytes};
    ex = cli_engine_open("produce", a.dir, false, &a.opts, &pr.engine, NULL);
    if (ex != CLI_EXIT_OK)
        return ex;
    struct named_run run = {0};
    struct txn_run txn = {.id = a.txn_id, .records_max = a.txn_records, .abort = a.txn_abort};
    ex = produce_open(&a, &pr, &run, &txn);
    if (ex != CLI_EXIT_OK)
        return ex;
    int result = produce_lines(&a, &pr, &run, &txn);
    result = produce_finish(&a, &pr, &run, &txn, result);
    produce_report(&a, &pr, &run, &txn, result);
    return result;
}
