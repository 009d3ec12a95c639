/*
 * cmd_recover.c — `ringtail recover DIR`: one writing open and a clean close of a data directory,
 * so that what the read-only commands (consume, txn list, topic list) only warn about is
 * repaired: torn tails cut, indexes rebuilt, transactions a crash left in Prepare* completed,
 * lost markers rewritten (docs/format.md G.5). All of it is what any writing open does; this
 * command owns only the reporting. It never writes a record.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void recover_usage(FILE *out)
{
    fprintf(out, "usage: ringtail recover DIR\n"
                 "\n"
                 "Opens DIR for writing and closes it cleanly: what every writing open does after\n"
                 "a crash (truncate torn tails, rebuild indexes, complete transactions left in\n"
                 "PrepareCommit/PrepareAbort, rewrite lost COMMIT/ABORT markers) is done and made\n"
                 "durable, and nothing else is written. Prints one summary line. A directory that\n"
                 "open refuses (RT_E_CORRUPT names the file and offset) is left as it is.\n"
                 "Exit status: 0 recovered or already clean, 1 failure, 2 usage error.\n");
}

int cmd_recover(int argc, char **argv)
{
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            recover_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0')
            return cli_usage("recover", "unknown option %s", argv[i]);
        if (dir)
            return cli_usage("recover", "unexpected argument '%s'", argv[i]);
        dir = argv[i];
    }
    if (!dir)
        return cli_usage("recover", "missing DIR");

    rt_engine *engine = NULL;
    int ex = cli_engine_open("recover", dir, false, NULL, &engine, NULL);
    if (ex != CLI_EXIT_OK)
        return ex;
    struct rt_stats stats;
    int rc = rt_stats_get(engine, &stats);
    ex = cli_engine_close("recover", engine);
    if (ex != CLI_EXIT_OK)
        return ex;
    if (rc == 0 && stats.opened_unclean)
        printf("recovered %s: it was not closed cleanly; %" PRIu64
               " bytes past the last valid batch cut, %" PRIu64
               " damaged producer snapshots removed; now closed cleanly\n",
               dir, stats.tail_bytes_ignored, stats.snapshots_rejected);
    else
        printf("%s was closed cleanly: nothing to recover\n", dir);
    return CLI_EXIT_OK;
}
