/*
 * cmd_topic.c — `ringtail topic create DIR TOPIC --partitions N [--config K=V]...`, `topic list
 * DIR`, `topic describe DIR TOPIC` (partitions and every config with its source), `topic alter
 * DIR TOPIC --config K=V... [--delete-config K]...`, `topic add-partitions DIR TOPIC
 * --partitions N`, `topic delete DIR TOPIC` and `topic delete-records DIR --topic T --partition P
 * --offset O` (DeleteRecords: moves a partition's log start) and `topic compact DIR TOPIC` (the
 * log cleaner, now): the broker's admin operations, offline.
 *
 * Everything that can be checked without the engine (the name, the partition count, the
 * arguments) is checked before the data directory is opened, so a bad command leaves the
 * directory as it was; if `create` had to make the directory and the engine then refuses the
 * topic, the directory is removed again.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "meta.h" /* meta_topic_name_valid: the rule rt_topic_create enforces, checked up front */

static void topic_usage(FILE *out)
{
    fprintf(
        out,
        "usage: ringtail topic create DIR TOPIC --partitions N [--config KEY=VALUE]...\n"
        "       ringtail topic list DIR\n"
        "       ringtail topic describe DIR TOPIC\n"
        "       ringtail topic alter DIR TOPIC [--config KEY=VALUE]... [--delete-config KEY]...\n"
        "       ringtail topic add-partitions DIR TOPIC --partitions N\n"
        "       ringtail topic delete DIR TOPIC\n"
        "       ringtail topic delete-records DIR --topic T --partition P --offset O\n"
        "       ringtail topic compact DIR TOPIC\n"
        "\n"
        "create  makes TOPIC with N partitions (1..1024 by default) in the data directory\n"
        "        DIR, creating DIR if it does not exist. TOPIC is 1..249 characters of\n"
        "        [a-zA-Z0-9._-], not '.' or '..' (Kafka's rule). Fails if TOPIC exists.\n"
        "        --config sets one of Kafka's topic configs (retention.ms, retention.bytes,\n"
        "        segment.bytes, max.message.bytes, message.timestamp.type, cleanup.policy\n"
        "        =delete|compact|compact,delete, delete.retention.ms, min.compaction.lag.ms,\n"
        "        and the others Kafka knows), checked by Kafka's rule for it.\n"
        "list    prints one line per topic: NAME<TAB>PARTITIONS, in creation order.\n"
        "describe prints the partition count, then one line per config:\n"
        "        KEY<TAB>VALUE<TAB>SOURCE (topic, engine or default)<TAB>(honoured|kept).\n"
        "alter   sets (--config) or removes (--delete-config) the topic's own configs; the\n"
        "        others stay.\n"
        "add-partitions raises the partition count to N (only up).\n"
        "delete  removes TOPIC and its records.\n"
        "delete-records moves partition P's log start offset to O (-1: its high watermark),\n"
        "        as Kafka's DeleteRecords does: nothing below it is read again; prints the new\n"
        "        log start. O above the high watermark fails.\n"
        "compact cleans every partition of TOPIC now, as the log cleaner does (cleanup.policy\n"
        "        must hold compact): the latest record of each key is kept, aborted records,\n"
        "        old tombstones and markers go, offsets stay; the active segment is untouched.\n"
        "\n"
        "Exit status: 0 success, 1 failure (topic exists or not, directory locked, I/O), 2\n"
        "usage error (missing argument, bad name, bad partition count, bad config).\n");
}

#define CONFIGS_MAX 64

struct configs {
    struct rt_topic_config entries[CONFIGS_MAX];
    char text[CONFIGS_MAX][512];
    size_t count;
};

/* KEY=VALUE (or KEY alone, for a removal) into *c, checked as the engine will check it, so a bad
 * one is a usage error before the directory is opened. */
static int config_arg(const char *sub, struct configs *c, const char *arg, bool removal)
{
    if (c->count == CONFIGS_MAX)
        return cli_usage("topic", "%s: at most %d configs", sub, CONFIGS_MAX);
    char *t = c->text[c->count];
    if (snprintf(t, sizeof(c->text[0]), "%s", arg) >= (int)sizeof(c->text[0]))
        return cli_usage("topic", "%s: config '%.40s...' is too long", sub, arg);
    char *eq = removal ? NULL : strchr(t, '=');
    if (!removal && (!eq || eq == t))
        return cli_usage("topic", "%s: --config wants KEY=VALUE, not '%s'", sub, arg);
    if (eq)
        *eq = 0;
    const char *value = eq ? eq + 1 : NULL;
    for (size_t i = 0; i < c->count; i++)
        if (strcmp(c->entries[i].name, t) == 0)
            return cli_usage("topic", "%s: config %s given twice", sub, t);
    if (rt_topic_config_check(t, value) != 0)
        return cli_usage("topic", "%s: %s", sub, rt_error_detail());
    c->entries[c->count++] = (struct rt_topic_config){t, value};
    return CLI_EXIT_OK;
}

static int topic_create(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"partitions", required_argument, NULL, 'n'},
        {"config", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *partitions_arg = NULL;
    struct configs cfg = {0};
    int c;
    optind = 0; /* GNU: full re-initialisation; options may follow the positionals */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":n:c:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            partitions_arg = optarg;
            break;
        case 'c':
            if (config_arg("create", &cfg, optarg, false) != CLI_EXIT_OK)
                return CLI_EXIT_USAGE;
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
    int rc = rt_topic_create_with_configs(engine, topic, partitions, cfg.entries, cfg.count);
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

/* The positionals DIR TOPIC of a subcommand, options parsed by the caller's getopt loop. */
static int dir_topic(const char *sub, int argc, char **argv, const char **dir, const char **topic)
{
    int npos = argc - optind;
    const char **pos = (const char **)argv + optind;
    if (npos < 1)
        return cli_usage("topic", "%s: missing DIR", sub);
    if (npos < 2)
        return cli_usage("topic", "%s: missing TOPIC", sub);
    if (npos > 2)
        return cli_usage("topic", "%s: unexpected argument '%s'", sub, pos[2]);
    if (!meta_topic_name_valid(pos[1]))
        return cli_usage("topic",
                         "%s: invalid topic name '%s': use 1..%d characters of "
                         "[a-zA-Z0-9._-], not '.' or '..'",
                         sub, pos[1], RT_TOPIC_NAME_MAX);
    *dir = pos[0];
    *topic = pos[1];
    return CLI_EXIT_OK;
}

/* alter, add-partitions, delete: one writing call on an existing directory. */
static int topic_change(const char *sub, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"partitions", required_argument, NULL, 'n'},
        {"config", required_argument, NULL, 'c'},
        {"delete-config", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool alter = strcmp(sub, "alter") == 0, add = strcmp(sub, "add-partitions") == 0;
    const char *partitions_arg = NULL;
    struct configs cfg = {0};
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":n:c:d:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (!add)
                return cli_usage("topic", "%s: unknown option --partitions", sub);
            partitions_arg = optarg;
            break;
        case 'c':
        case 'd':
            if (!alter)
                return cli_usage("topic", "%s: unknown option %s", sub, argv[optind - 1]);
            if (config_arg(sub, &cfg, optarg, c == 'd') != CLI_EXIT_OK)
                return CLI_EXIT_USAGE;
            break;
        case 'h':
            topic_usage(stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage("topic", "%s: option %s needs a value", sub, argv[optind - 1]);
        default:
            return cli_usage("topic", "%s: unknown option %s", sub, argv[optind - 1]);
        }
    }
    const char *dir = NULL, *topic = NULL;
    int ex = dir_topic(sub, argc, argv, &dir, &topic);
    if (ex != CLI_EXIT_OK)
        return ex;
    uint32_t partitions = 0;
    if (add && !partitions_arg)
        return cli_usage("topic", "%s: missing --partitions N", sub);
    if (add && !cli_parse_u32(partitions_arg, 1, UINT32_MAX, &partitions))
        return cli_usage("topic", "%s: --partitions must be a whole number >= 1, not '%s'", sub,
                         partitions_arg);
    if (alter && cfg.count == 0)
        return cli_usage("topic", "alter: nothing to change (--config or --delete-config)");
    rt_engine *engine = NULL;
    ex = cli_engine_open("topic", dir, false, NULL, &engine, NULL);
    if (ex != CLI_EXIT_OK)
        return ex;
    int rc = alter ? rt_topic_config_alter(engine, topic, cfg.entries, cfg.count, false)
             : add ? rt_topic_add_partitions(engine, topic, partitions)
                   : rt_topic_delete(engine, topic);
    if (rc != 0) {
        if (rc == RT_E_UNKNOWN_TOPIC_OR_PARTITION)
            cli_fail("topic", "%s: no topic '%s' in %s", sub, topic, dir);
        else
            cli_fail_rt("topic", rc, "%s: topic '%s' in %s", sub, topic, dir);
        rt_close(engine);
        return CLI_EXIT_FAIL;
    }
    ex = cli_engine_close("topic", engine);
    if (ex != CLI_EXIT_OK)
        return ex;
    if (alter)
        printf("altered %zu config%s of topic %s in %s\n", cfg.count, cfg.count == 1 ? "" : "s",
               topic, dir);
    else if (add)
        printf("topic %s now has %" PRIu32 " partitions in %s\n", topic, partitions, dir);
    else
        printf("deleted topic %s in %s\n", topic, dir);
    return CLI_EXIT_OK;
}

static int topic_delete_records(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"topic", required_argument, NULL, 't'},
        {"partition", required_argument, NULL, 'p'},
        {"offset", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *topic = NULL, *partition_arg = NULL, *offset_arg = NULL;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":t:p:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            topic = optarg;
            break;
        case 'p':
            partition_arg = optarg;
            break;
        case 'o':
            offset_arg = optarg;
            break;
        case 'h':
            topic_usage(stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage("topic", "delete-records: option %s needs a value", argv[optind - 1]);
        default:
            return cli_usage("topic", "delete-records: unknown option %s", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage("topic", "delete-records: missing DIR");
    const char *dir = argv[optind];
    if (optind + 1 < argc)
        return cli_usage("topic", "delete-records: unexpected argument '%s'", argv[optind + 1]);
    if (!topic || !partition_arg || !offset_arg)
        return cli_usage("topic", "delete-records: wants --topic T --partition P --offset O");
    if (!meta_topic_name_valid(topic))
        return cli_usage("topic",
                         "delete-records: topic name '%s' is not 1..249 characters of "
                         "[a-zA-Z0-9._-] (or is '.' or '..')",
                         topic);
    uint32_t partition = 0;
    if (!cli_parse_u32(partition_arg, 0, UINT32_MAX, &partition))
        return cli_usage("topic", "delete-records: --partition must be a whole number, not '%s'",
                         partition_arg);
    int64_t offset = 0;
    if (!cli_parse_i64(offset_arg, &offset) || offset < -1)
        return cli_usage("topic", "delete-records: --offset must be an offset >= 0 or -1, not '%s'",
                         offset_arg);
    rt_engine *engine = NULL;
    int ex = cli_engine_open("topic", dir, false, NULL, &engine, NULL);
    if (ex != CLI_EXIT_OK)
        return ex;
    int64_t low = -1;
    int rc = rt_partition_delete_records(engine, topic, partition, offset, &low);
    if (rc != 0) {
        cli_fail_rt("topic", rc, "delete-records: %s-%" PRIu32 " in %s", topic, partition, dir);
        rt_close(engine);
        return CLI_EXIT_FAIL;
    }
    ex = cli_engine_close("topic", engine);
    if (ex != CLI_EXIT_OK)
        return ex;
    printf("log start offset of %s-%" PRIu32 " is %" PRId64 " in %s\n", topic, partition, low, dir);
    return CLI_EXIT_OK;
}

/* `topic SUB DIR TOPIC`, a subcommand without options: *go is false after --help (the answer
 * CLI_EXIT_OK) or on a usage error (its code); else dir and topic are set. */
static int no_option_dir_topic(const char *sub, int argc, char **argv, const char **dir,
                               const char **topic, bool *go)
{
    *go = false;
    optind = 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            topic_usage(stdout);
            return CLI_EXIT_OK;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cli_usage("topic", "%s: unknown option %s", sub, argv[i]);
        }
    int ex = dir_topic(sub, argc, argv, dir, topic);
    *go = ex == CLI_EXIT_OK;
    return ex;
}

static int topic_compact(int argc, char **argv)
{
    const char *dir = NULL, *topic = NULL;
    bool go = false;
    int ex = no_option_dir_topic("compact", argc, argv, &dir, &topic, &go);
    if (!go)
        return ex;
    rt_engine *engine = NULL;
    ex = cli_engine_open("topic", dir, false, NULL, &engine, NULL);
    if (ex != CLI_EXIT_OK)
        return ex;
    int rc = rt_topic_compact(engine, topic);
    if (rc != 0) {
        cli_fail_rt("topic", rc, "compact: topic '%s' in %s", topic, dir);
        rt_close(engine);
        return CLI_EXIT_FAIL;
    }
    ex = cli_engine_close("topic", engine);
    if (ex == CLI_EXIT_OK)
        printf("compacted topic %s in %s\n", topic, dir);
    return ex;
}

static int print_config(void *ctx, const char *name, const char *value,
                        enum rt_config_source source, bool honoured)
{
    (void)ctx;
    printf("%s\t%s\t%s\t%s\n", name, value,
           source == RT_CONFIG_TOPIC             ? "topic"
           : source == RT_CONFIG_ENGINE          ? "engine"
           : source == RT_CONFIG_DYNAMIC_DEFAULT ? "dynamic"
                                                 : "default",
           honoured ? "honoured" : "kept");
    return 0;
}

static int topic_describe(int argc, char **argv)
{
    const char *dir = NULL, *topic = NULL;
    bool go = false;
    int ex = no_option_dir_topic("describe", argc, argv, &dir, &topic, &go);
    if (!go)
        return ex;
    rt_engine *engine = NULL;
    ex = cli_engine_open_read_only("topic", dir, &engine);
    if (ex != CLI_EXIT_OK)
        return ex;
    uint32_t partitions = 0;
    int rc = rt_topic_describe(engine, topic, &partitions);
    if (rc == 0) {
        printf("topic\t%s\npartitions\t%" PRIu32 "\n", topic, partitions);
        rc = rt_topic_config_get(engine, topic, print_config, NULL);
    }
    if (rc != 0) {
        if (rc == RT_E_UNKNOWN_TOPIC_OR_PARTITION)
            cli_fail("topic", "describe: no topic '%s' in %s", topic, dir);
        else
            cli_fail_rt("topic", rc, "describe: topic '%s' in %s", topic, dir);
        rt_close(engine);
        return CLI_EXIT_FAIL;
    }
    return cli_engine_close("topic", engine);
}

int cmd_topic(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage("topic", "missing subcommand: create, list, describe, alter, "
                                  "add-partitions, delete, delete-records or compact");
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
        topic_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(sub, "create") == 0)
        return topic_create(argc - 1, argv + 1);
    if (strcmp(sub, "list") == 0)
        return topic_list(argc - 1, argv + 1);
    if (strcmp(sub, "describe") == 0)
        return topic_describe(argc - 1, argv + 1);
    if (strcmp(sub, "alter") == 0 || strcmp(sub, "add-partitions") == 0 ||
        strcmp(sub, "delete") == 0)
        return topic_change(sub, argc - 1, argv + 1);
    if (strcmp(sub, "delete-records") == 0)
        return topic_delete_records(argc - 1, argv + 1);
    if (strcmp(sub, "compact") == 0)
        return topic_compact(argc - 1, argv + 1);
    return cli_usage("topic",
                     "unknown subcommand '%s' (create, list, describe, alter, add-partitions, "
                     "delete, delete-records, compact)",
                     sub);
}
