/*
 * cmd_murmur2.c — `ringtail murmur2 [--partitions N] KEY...`: prints Kafka's murmur2 hash of
 * each key and, with --partitions, the partition Kafka's default partitioner (and `ringtail
 * produce`) would choose. For operators asking "where did key K go?", and the hook by which
 * tests/cli_murmur2.sh checks murmur2.c against Kafka's and librdkafka's published vectors.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "murmur2.h"

static void murmur2_usage(FILE *out)
{
    fprintf(out, "usage: ringtail murmur2 [--partitions N] KEY...\n"
                 "\n"
                 "Prints one line per KEY: the key, Kafka's murmur2 hash of its bytes as a signed\n"
                 "32-bit number (as Java's Utils.murmur2 returns it) and, with --partitions N,\n"
                 "toPositive(hash) %% N: the partition Kafka's default partitioner and\n"
                 "'ringtail produce' pick for that key.\n");
}

int cmd_murmur2(int argc, char **argv)
{
    uint32_t partitions = 0;
    int first = 1;
    for (; first < argc; first++) {
        const char *a = argv[first];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            murmur2_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(a, "--partitions") == 0 || strcmp(a, "-n") == 0) {
            if (first + 1 >= argc || !cli_parse_u32(argv[first + 1], 1, UINT32_MAX, &partitions))
                return cli_usage("murmur2", "--partitions needs a number >= 1");
            first++;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            first++;
            break;
        }
        if (a[0] == '-' && a[1] != '\0')
            return cli_usage("murmur2", "unknown option %s", a);
        break;
    }
    if (first >= argc)
        return cli_usage("murmur2", "missing KEY");
    for (int i = first; i < argc; i++) {
        int32_t h = murmur2(argv[i], strlen(argv[i]));
        printf("%s\t%" PRId32, argv[i], h);
        if (partitions)
            printf("\t%" PRIu32, murmur2_partition(argv[i], strlen(argv[i]), partitions));
        putchar('\n');
    }
    return CLI_EXIT_OK;
}
