/*
 * cmd_topic.c — `ringtail topic create DIR TOPIC --partitions N` and `ringtail topic list DIR`.
 *
 * Everything that can be checked without the engine (the name, the partition count, the
 * arguments) is checked before the data directory is opened, so a bad command leaves the
 * directory as it was; if `create` had to make the directory and the engine then refuses the
 * topic, the directory is removed again.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "meta.h" /* meta_topic_name_valid: the rule rt_topic_create enforces, checked up front */

static void topic_usage(FILE *out)
{
    fprintf(out,
            "usage: ringtail topic create DIR TOPIC --partitions N\n"
            "       ringtail topic list DIR\n"
            "\n"
            "create  makes TOPIC with N partitions (1..1024 by default) in the data directory\n"
            "        DIR, creating DIR if it does not exist. TOPIC is 1..249 characters of\n"
            "        [a-zA-Z0-9._-], not '.' or '..' (Kafka's rule). Fails if TOPIC exists.\n"
            "list    prints one line per topic: NAME<TAB>PARTITIONS, in creation order.\n"
            "\n"
            "Exit status: 0 success, 1 failure (topic exists, directory locked, I/O), 2 usage\n"
            "error (missing argument, bad name, bad partition count).\n");
}

static int topic_create(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"partitions", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *partitions_arg = NULL;
    int c;
    optind = 0; /* GNU: full re-initialisation; options may follow the positionals */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":n:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            partitions_arg = optarg;
            break;
        case 'h':
            topic_usage(stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage("topic", "create: option %s needs a value", argv[optind - 1]);
        default:
            return cli_usage("topic", "create: unknown option %s", argv[optind - 1]);
        }
    }
    int npos = argc - optind;
    const char **pos = (const char **)argv + optind;
    if (npos < 1)
        return cli_usage("topic", "create: missing DIR");
    if (npos < 2)
        return cli_usage("topic", "create: missing TOPIC");
    if (npos > 2)
        return cli_usage("topic", "create: unexpected argument '%s'", pos[2]);
    if (!partitions_arg)
        return cli_usage("topic", "create: missing --partitions N");
    const char *dir = pos[0];
    const char *topic = pos[1];
    uint32_t partitions;
    if (!cli_parse_u32(partitions_arg, 1, UINT32_MAX, &partitions))
        return cli_usage("topic", "create: --partitions must be a whole number >= 1, not '%s'",
                         partitions_arg);
    if (!meta_topic_name_valid(topic))
        return cli_usage("topic",
                         "create: invalid topic name '%s': use 1..%d characters of "
                         "[a-zA-Z0-9._-], not '.' or '..'",
                         topic, RT_TOPIC_NAME_MAX);

    rt_engine *engine = NULL;
    bool created = false;
    int ex = cli_engine_open("topic", dir, true, NULL, &engine, &created);
    if (ex != CLI_EXIT_OK)
        return ex;
    int rc = rt_topic_create(engine, topic, partitions);
    if (rc != 0) {
        if (rc == RT_E_TOPIC_ALREADY_EXISTS)
            cli_fail("topic", "create: topic '%s' already exists in %s", topic, dir);
        else
            cli_fail_rt("topic", rc, "create: topic '%s' in %s", topic, dir);
        rt_close(engine);
        if (created)
            cli_remove_tree(dir);
        return CLI_EXIT_FAIL;
    }
    ex = cli_engine_close("topic", engine);
    if (ex != CLI_EXIT_OK)
        return ex;
    printf("created topic %s with %" PRIu32 " partition%s in %s\n", topic, partitions,
           partitions == 1 ? "" : "s", dir);
    return CLI_EXIT_OK;
}

static int print_topic(void *ctx, const char *name, uint32_t partitions)
{
    unsigned *count = ctx;
    (*count)++;
    printf("%s\t%" PRIu32 "\n", name, partitions);
    return 0;
}

static int topic_list(int argc, char **argv)
{
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            topic_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0')
            return cli_usage("topic", "list: unknown option %s", argv[i]);
        if (dir)
            return cli_usage("topic", "list: unexpected argument '%s'", argv[i]);
        dir = argv[i];
    }
    if (!dir)
        return cli_usage("topic", "list: missing DIR");
    rt_engine *engine = NULL;
    int ex = cli_engine_open_read_only("topic", dir, &engine);
    if (ex != CLI_EXIT_OK)
        return ex;
    unsigned count = 0;
    int rc = rt_topic_list(engine, print_topic, &count);
    if (rc != 0) {
        cli_fail_rt("topic", rc, "list: %s", dir);
        rt_close(engine);
        return CLI_EXIT_FAIL;
    }
    return cli_engine_close("topic", engine);
}

int cmd_topic(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage("topic", "missing subcommand: create or list");
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
        topic_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(sub, "create") == 0)
        return topic_create(argc - 1, argv + 1);
    if (strcmp(sub, "list") == 0)
        return topic_list(argc - 1, argv + 1);
    return cli_usage("topic", "unknown subcommand '%s' (create or list)", sub);
}
