/*
 * main.c — the `ringtail` command: finds the subcommand in one table and hands it argv. Each
 * subcommand lives in its own cmd_<name>.c, parses its own options and prints its own --help;
 * this file owns only the table, the top-level help and the version.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct cli_command commands[] = {
    {"topic", "create and list topics", cmd_topic},
    {"produce", "append stdin lines as records", cmd_produce},
    {"consume", "print records of a topic", cmd_consume},
    {"txn", "list open transactions; abort a hanging one", cmd_txn},
    {"dump", "list the contents of .log, .index, .timeindex and ringtail.meta files", cmd_dump},
    {"verify", "check every CRC, index and invariant of a closed data directory", cmd_verify},
    {"recover", "repair a data directory a crash left (a writing open and a clean close)",
     cmd_recover},
    {"demo", "a short, self-explaining tour of the engine", cmd_demo},
    {"murmur2", "print Kafka's murmur2 hash and partition of keys", cmd_murmur2},
    {"serve", "a single-node Kafka broker over a data directory", cmd_serve},
    {"cluster", "the nodes, controller and partition leaders of a cluster, over the wire",
     cmd_cluster},
    {"acl", "add, list and remove the broker's ACLs (Kafka's kafka-acls)", cmd_acl},
    {"user", "add, list and remove the SCRAM users the broker authenticates", cmd_user},
    {"bench", "benchmark against the disk's limit and RocksDB, LMDB, SQLite", cmd_bench},
};

#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: ringtail COMMAND [ARGS...]\n"
                 "\n"
                 "ringtail is an embeddable storage engine for partitioned, transactional\n"
                 "message logs in Kafka's on-disk format. Commands:\n\n");
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'ringtail COMMAND --help' describes a command. Exit status: 0 success,\n"
                 "1 failure, 2 usage error.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        if (argc >= 3) {
            for (size_t i = 0; i < COMMAND_COUNT; i++) {
                if (strcmp(argv[2], commands[i].name) == 0) {
                    char help[] = "--help";
                    char *sub[] = {argv[2], help, NULL};
                    return commands[i].run(2, sub);
                }
            }
        }
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0) {
        printf("ringtail 0.1.0\n");
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < COMMAND_COUNT; i++) {
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "ringtail: unknown command '%s'\n\n", name);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
