/*
 * fuzz_kafka_acl_store.c — libFuzzer target for the acls.meta parser (tools/kafka/auth/
 * acl_store.c, docs/format.md J). It must never read out of bounds; a refusal names a reason
 * and an offset inside the input (AS1); what it accepts holds only valid bindings (acl.h AC5)
 * and encodes back to the same bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ringtail.h"
#include "tools/kafka/auth/acl_store.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_kafka_acl_store: %s:%d: %s\n", __FILE__, __LINE__, #cond);       \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct acl_set s;
    const char *why = NULL;
    size_t bad = 0;
    int rc = acl_store_parse(data, size, &s, &why, &bad);
    if (rc) {
        CHECK(rc == RT_E_CORRUPT || rc == -12);
        CHECK(rc != RT_E_CORRUPT || (why != NULL && bad <= size));
        CHECK(s.count == 0 && s.v == NULL); /* AS1: nothing of it */
        return 0;
    }
    for (uint32_t i = 0; i < s.count; i++)
        CHECK(acl_binding_invalid(&s.v[i]) == NULL);
    uint8_t *buf = NULL;
    size_t len = 0;
    CHECK(acl_store_encode(&s, &buf, &len) == 0);
    CHECK(len == size); /* every binding kept as read, repeats too (format.md J.2) */
    struct acl_set back;
    CHECK(acl_store_parse(buf, len, &back, &why, &bad) == 0);
    CHECK(back.count == s.count);
    for (uint32_t i = 0; i < s.count; i++)
        CHECK(acl_binding_equal(&back.v[i], &s.v[i]));
    CHECK(memcmp(buf, data, size) == 0);
    free(buf);
    acl_set_free(&back);
    acl_set_free(&s);
    return 0;
}
