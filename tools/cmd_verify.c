/*
 * cmd_verify.c — `ringtail verify DIR`: runs the engine's offline check (rt_verify, in
 * engine/check/verify.c) over a closed data directory and turns its report into output and an exit
 * status. The checks themselves live in the engine so tests and embedders get the same ones.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tools/kafka/cluster/hw_checkpoint.h"
#include "tools/kafka/sasl/cred_store.h"

static void verify_usage(FILE *out)
{
    fprintf(out, "usage: ringtail verify DIR\n"
                 "\n"
                 "Checks a data directory that no engine has open: the topic catalogue, every\n"
                 "partition directory, every batch's length, CRC and records, offset continuity\n"
                 "within and across segments, and every .index and .timeindex entry against the\n"
                 "log; the broker's SCRAM credentials file (scram-credentials) and a cluster\n"
                 "node's replication-offset-checkpoint when there are. Changes nothing.\n"
                 "\n"
                 "Healthy: prints one summary line and exits 0. Otherwise prints one problem per\n"
                 "line ('FILE: offset N: what') and exits 1. Lines starting 'warning:' do not\n"
                 "fail the check: stray files, and what a crash normally leaves in the newest\n"
                 "segment, which the next open repairs (index entries past a lost tail).\n"
                 "A directory locked by a running engine exits 1. Exit status 2: usage error.\n");
}

static void print_problem(void *ctx, const char *msg)
{
    (void)ctx;
    printf("%s\n", msg);
}

int cmd_verify(int argc, char **argv)
{
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            verify_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0')
            return cli_usage("verify", "unknown option %s", argv[i]);
        if (dir)
            return cli_usage("verify", "unexpected argument '%s'", argv[i]);
        dir = argv[i];
    }
    if (!dir)
        return cli_usage("verify", "missing DIR");

    struct rt_verify_counts n;
    int rc = rt_verify_with_counts(dir, print_problem, NULL, &n);
    fflush(stdout);
    if (rc == RT_E_DIRECTORY_LOCKED)
        return cli_fail("verify",
                        "%s is locked by a running engine (%s/.lock): close it first, verify "
                        "only checks closed directories",
                        dir, dir);
    if (rc != 0 && rc != RT_E_CORRUPT) {
        const char *detail = rt_error_detail(); /* names the directory already */
        if (detail && *detail)
            return cli_fail("verify", "%s", detail);
        return cli_fail("verify", "%s: %s", dir, rt_strerror(rc));
    }
    /* The broker's credentials (docs/format.md S): damage is a problem like any other. */
    char cerr[CRED_ERROR_MAX] = "";
    int crc = cred_file_check(dir, cerr, sizeof(cerr));
    if (crc == RT_E_CORRUPT) {
        printf("%s\n", cerr);
        n.problems++;
        if (rc == 0)
            rc = RT_E_CORRUPT;
    } else if (crc != 0 && crc != -ENOENT) {
        printf("%s/%s: %s\n", dir, CRED_FILE_NAME, rt_strerror(crc));
        n.problems++;
        if (rc == 0)
            rc = RT_E_CORRUPT;
    }
    /* A cluster node's replication-offset-checkpoint (docs/format.md M), when there is one. */
    struct hw_checkpoint hc;
    size_t bad_line = 0;
    int hrc = hw_checkpoint_load(dir, &hc, &bad_line);
    if (hrc == 0) {
        hw_checkpoint_free(&hc);
    } else {
        if (hrc == RT_E_CORRUPT)
            printf("%s/%s: line %zu: not a checkpoint line\n", dir, HW_CHECKPOINT_FILE, bad_line);
        else
            printf("%s/%s: %s\n", dir, HW_CHECKPOINT_FILE, rt_strerror(hrc));
        n.problems++;
        if (rc == 0)
            rc = RT_E_CORRUPT;
    }
    fflush(stdout);
    char bytes[32];
    cli_bytes(bytes, sizeof bytes, n.bytes);
    printf("%s: %" PRIu64 " topic%s, %" PRIu64 " partition%s, %" PRIu64 " segment%s, %" PRIu64
           " batch%s, %" PRIu64 " record%s, %s checked: ",
           dir, n.topics, n.topics == 1 ? "" : "s", n.partitions, n.partitions == 1 ? "" : "s",
           n.segments, n.segments == 1 ? "" : "s", n.batches, n.batches == 1 ? "" : "es", n.records,
           n.records == 1 ? "" : "s", bytes);
    if (rc == 0)
        printf("healthy%s\n", n.warnings ? " (with warnings)" : "");
    else
        printf("%" PRIu64 " problem%s\n", n.problems, n.problems == 1 ? "" : "s");
    fflush(stdout);
    return rc == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
