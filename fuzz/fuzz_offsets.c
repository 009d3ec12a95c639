/*
 * fuzz_offsets.c — libFuzzer target for the `__consumer_offsets` record codec in
 * engine/txn/group.c (docs/format.md §H). The first input byte picks the decoder (bit 1 set: a
 * group metadata value, H.6; else even: key, odd: offset value); the rest is the record's bytes. A decoder must never read outside its
 * input, and whatever it accepts must re-encode to exactly the same bytes (the layouts have no
 * optional or padding bytes). The Java hash behind group placement runs over the same bytes
 * (it must accept any byte string) and the partition it picks must be in range.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_offsets: %s:%d: %s\n", __FILE__, __LINE__, #cond);               \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#include "group_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool value = data[0] & 1;
    /* A private copy, so ASan catches a read one past the record. */
    size_t len = size - 1;
    uint8_t *in = malloc(len ? len : 1);
    CHECK(in);
    memcpy(in, data + 1, len);
    uint8_t *out = malloc(len + 16);
    CHECK(out);
    const char *why = NULL;
    size_t n = 0;
    if (data[0] & 2) {
        struct group_meta_value v;
        int rc = group_meta_value_decode(in, len, &v, &why);
        if (rc == 0) {
            CHECK(v.version >= 0 && v.version <= 3);
            CHECK(v.members_count >= 0 && (size_t)v.members_count <= len);
            struct group_meta_member *ms =
                calloc(v.members_count ? (size_t)v.members_count : 1, sizeof(*ms));
            CHECK(ms);
            for (int32_t i = 0; i < v.members_count; i++) {
                group_meta_member_at(&v, i, &ms[i]);
                CHECK(ms[i].assignment >= in &&
                      ms[i].assignment + ms[i].assignment_len <= in + len);
            }
            CHECK(group_meta_value_size(&v, ms) == len);
            CHECK(group_meta_value_encode(&v, ms, out, len + 16, &n) == 0);
            CHECK(n == len);
            CHECK(memcmp(out, in, len) == 0);
            free(ms);
        } else {
            CHECK(why != NULL);
        }
    } else if (!value) {
        struct group_offset_key k;
        int rc = group_key_decode(in, len, &k, &why);
        if (rc == 0) {
            CHECK(k.group >= in && k.group + k.group_len <= in + len);
            CHECK(group_key_encode(&k, out, len + 16, &n) == 0);
            CHECK(n == len);
            CHECK(memcmp(out, in, len) == 0);
            if (len > 0)
                CHECK(group_key_encode(&k, out, len - 1, &n) != 0);
        } else {
            CHECK(why != NULL);
        }
    } else {
        struct group_offset_value v;
        int rc = group_value_decode(in, len, &v, &why);
        if (rc == 0) {
            CHECK(v.version >= 0 && v.version <= 3);
            CHECK(group_value_encode(&v, out, len + 16, &n) == 0);
            CHECK(n == len);
            CHECK(memcmp(out, in, len) == 0);
        } else {
            CHECK(why != NULL);
        }
    }
    (void)group_java_hash((const char *)in, len);
    char *s = malloc(len + 1);
    CHECK(s);
    memcpy(s, in, len);
    s[len] = '\0';
    CHECK(group_partition_for(s) < GROUP_OFFSETS_PARTITIONS);
    free(s);
    free(out);
    free(in);
    return 0;
}
