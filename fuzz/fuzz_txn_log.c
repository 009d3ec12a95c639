/*
 * fuzz_txn_log.c — libFuzzer target for engine/txn/txn_log.c (docs/format.md §G). The first input
 * byte chooses the decoder (even: key, odd: value); the rest, copied to an exact-size buffer so
 * ASan sees any read past the end, is the record. Whatever decodes must re-encode (ringtail's
 * version 0x7201, 0x7202 or 0x7203 as read), and the re-encoded bytes must decode to the same fields
 * (0x7202's sequences and 0x7203's first offsets included); for a key, to the same bytes. A
 * failure must leave no allocation behind and name a rule (TLK1-TLK5, TLV1-TLV16).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "txn_log.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_txn_log: %s:%d: %s\n", __FILE__, __LINE__, #cond);               \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A refusal names the rule it broke: TLK<n> for keys, TLV<n> for values (txn_log.c). */
static void check_why(const char *why, const char *prefix)
{
    size_t n = strlen(prefix);
    CHECK(why != NULL);
    CHECK(strncmp(why, prefix, n) == 0);
    CHECK(why[n] >= '1' && why[n] <= '9');
}

static void fuzz_key(const uint8_t *buf, size_t len)
{
    char id[TXN_ID_MAX_BYTES + 1];
    const char *why = NULL;
    int rc = txn_log_key_decode(buf, len, id, &why);
    if (rc) {
        CHECK(rc == RT_E_CORRUPT);
        check_why(why, "TLK");
        return;
    }
    uint8_t again[TXN_ID_MAX_BYTES + 4];
    size_t n = 0;
    CHECK(txn_log_key_encode(id, again, sizeof(again), &n) == 0);
    CHECK(n == len);
    CHECK(memcmp(again, buf, len) == 0);
}

static void same_fields(const struct txn_log_value *a, const struct txn_log_value *b)
{
    CHECK(a->producer_id == b->producer_id);
    CHECK(a->producer_epoch == b->producer_epoch);
    CHECK(a->timeout_ms == b->timeout_ms);
    CHECK(a->state == b->state);
    CHECK(a->partition_count == b->partition_count);
    for (uint32_t i = 0; i < a->partition_count; i++) {
        CHECK(strcmp(a->partitions[i].topic, b->partitions[i].topic) == 0);
        CHECK(a->partitions[i].partition == b->partitions[i].partition);
        CHECK(a->partitions[i].last_sequence == b->partitions[i].last_sequence);
        CHECK(a->partitions[i].first_offset == b->partitions[i].first_offset);
    }
    CHECK(a->last_update_ms == b->last_update_ms);
    CHECK(a->start_ms == b->start_ms);
    CHECK(a->check_count == b->check_count);
    CHECK(a->hanging == b->hanging);
    CHECK(a->acked_durable == b->acked_durable);
    CHECK(a->one_round == b->one_round);
    CHECK(a->kept_epoch == b->kept_epoch);
    CHECK(a->txn_epoch == b->txn_epoch);
}

static void fuzz_value(const uint8_t *buf, size_t len)
{
    struct txn_log_value v;
    const char *why = NULL;
    int rc = txn_log_value_decode(buf, len, &v, &why);
    if (rc) {
        CHECK(rc == RT_E_CORRUPT || rc == -ENOMEM);
        CHECK(v.partitions == NULL);
        if (rc == RT_E_CORRUPT)
            check_why(why, "TLV");
        return;
    }
    CHECK(v.partition_count == 0 || v.partitions != NULL);
    size_t size = txn_log_value_size(&v);
    uint8_t *again = malloc(size);
    CHECK(again != NULL);
    size_t n = 0;
    CHECK(txn_log_value_encode(&v, again, size, &n) == 0);
    CHECK(n == size);
    /* a ringtail value is at least as long as what was read: Kafka v0 lacks 5 bytes, and
     * regrouping a topic that was listed twice only saves bytes */
    CHECK(n <= len + 5);
    if (n > 0)
        CHECK(txn_log_value_encode(&v, again, size - 1, &n) == -ENOSPC);

    struct txn_log_value w;
    rc = txn_log_value_decode(again, size, &w, &why);
    CHECK(rc == 0);
    same_fields(&v, &w);
    /* a 0x7201 value whose topics each come once is canonical: the same bytes come back */
    if (len == size && buf[0] == 0x72)
        CHECK(memcmp(again, buf, len) == 0);
    txn_log_value_free(&w);
    txn_log_value_free(&v);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t len = size - 1;
    uint8_t *buf = malloc(len ? len : 1);
    CHECK(buf != NULL);
    memcpy(buf, data + 1, len);
    if (data[0] & 1)
        fuzz_value(buf, len);
    else
        fuzz_key(buf, len);
    free(buf);
    return 0;
}
