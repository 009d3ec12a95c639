/*
 * fuzz_kafka_broker_config_store.c — libFuzzer target for the broker-configs.meta parser
 * (tools/kafka/config/broker_config_store.c, docs/format.md K). It must never read out of
 * bounds; a refusal names a reason and an offset inside the input and keeps nothing (BS1);
 * what it accepts holds only dynamic names at their allowed level, in canonical spelling
 * (broker_config.h BC1-BC3), and encodes back to the same bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ringtail.h"
#include "tools/kafka/config/broker_config_store.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_kafka_broker_config_store: %s:%d: %s\n", __FILE__, __LINE__,     \
                    #cond);                                                                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct broker_config_set s;
    const char *why = NULL;
    size_t bad = 0;
    int rc = broker_config_store_parse(data, size, &s, &why, &bad);
    if (rc) {
        CHECK(rc == RT_E_CORRUPT || rc == -12);
        CHECK(rc != RT_E_CORRUPT || (why != NULL && bad <= size));
        CHECK(broker_config_set_count(&s) == 0); /* BS1: nothing of it */
        return 0;
    }
    for (int l = 0; l < BCL_LEVELS; l++)
        for (size_t k = 0; k < broker_config_count(); k++) {
            const char *v = s.value[l][k];
            if (!v)
                continue;
            char canon[BROKER_CONFIG_VALUE_MAX + 1], w[256];
            CHECK(broker_config_check(k, v, canon, w, sizeof(w)) == 0);
            CHECK(strcmp(canon, v) == 0);
            CHECK(l == BCL_BROKER || !broker_config_def(k)->per_broker);
        }
    uint8_t *buf = NULL;
    size_t len = 0;
    CHECK(broker_config_store_encode(&s, &buf, &len) == 0);
    CHECK(len == size && memcmp(buf, data, size) == 0); /* one encoding per set */
    struct broker_config_set back;
    CHECK(broker_config_store_parse(buf, len, &back, &why, &bad) == 0);
    CHECK(broker_config_set_count(&back) == broker_config_set_count(&s));
    free(buf);
    broker_config_set_free(&back);
    broker_config_set_free(&s);
    return 0;
}
