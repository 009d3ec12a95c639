/*
 * fuzz_kafka_cluster_voters.c — libFuzzer target for the `--voters` parser, Kafka's
 * controller.quorum.voters syntax (tools/kafka/cluster/quorum.c quorum_voters_parse). It must
 * never read past the input; a refusal is QUORUM_E_INVALID with a message naming an entry; what
 * it accepts holds 1..16 voters with ids > 0, ports > 0, no repeated id or address, and prints
 * back (ID@HOST:PORT joined by ',') to a list that parses to the same voters.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/cluster/quorum.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_kafka_cluster_voters: %s:%d: %s\n", __FILE__, __LINE__, #cond);  \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct quorum_voter v[QUORUM_VOTERS_MAX], back[QUORUM_VOTERS_MAX];
    int n = -1;
    char err[256] = "";
    int rc = quorum_voters_parse((const char *)data, size, v, &n, err, sizeof(err));
    if (rc) {
        CHECK(rc == QUORUM_E_INVALID);
        CHECK(n == 0);
        CHECK(strncmp(err, "voters: entry ", 14) == 0);
        return 0;
    }
    CHECK(n >= 1 && n <= QUORUM_VOTERS_MAX);
    static char text[QUORUM_VOTERS_MAX * (QUORUM_HOST_BYTES + 32)];
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        CHECK(v[i].id > 0 && v[i].port > 0 && v[i].host[0] != '\0');
        for (int j = 0; j < i; j++)
            CHECK(v[j].id != v[i].id && (v[j].port != v[i].port || strcmp(v[j].host, v[i].host)));
        char addr[QUORUM_HOST_BYTES + 8];
        quorum_voter_address(&v[i], addr, sizeof(addr));
        at += (size_t)snprintf(text + at, sizeof(text) - at, "%s%d@%s", i ? "," : "", (int)v[i].id,
                               addr);
    }
    int m = 0;
    CHECK(quorum_voters_parse(text, at, back, &m, err, sizeof(err)) == 0);
    CHECK(m == n);
    for (int i = 0; i < n; i++)
        CHECK(back[i].id == v[i].id && back[i].port == v[i].port &&
              strcmp(back[i].host, v[i].host) == 0);
    return 0;
}
