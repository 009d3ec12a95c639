/*
 * fuzz_txn_index.c — libFuzzer target for index/txn_index.c (docs/format.md §E). The first 8
 * input bytes are the segment's base offset (its top bit cleared), the next 16 a fetch range
 * [start, upper), the rest a raw .txnindex file. The pure checker runs over the file (it must
 * never read out of bounds, and a failure must name an entry whose prefix is itself valid).
 * When the file is valid it is opened through index/ (read-only, from a memfd) and
 * txn_index_collect must agree, entry for entry and in its stop flag, with Kafka's linear
 * TransactionIndex.collectAbortedTxns over the same bytes; then a writable open, an append past
 * the last entry, and truncate_to at the fetch start must keep the file valid.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "index/txn_index.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_txn_index: %s:%d: %s\n", __FILE__, __LINE__, #cond);             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static int64_t load_i64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    int64_t out;
    memcpy(&out, &v, sizeof(out));
    return out;
}

struct seen {
    struct txn_index_entry *e;
    size_t n, cap;
};

static int push(void *ctx, const struct txn_index_entry *e)
{
    struct seen *s = ctx;
    CHECK(s->n < s->cap);
    s->e[s->n++] = *e;
    return 0;
}

static int memfd_with(const uint8_t *data, size_t len, char *path, size_t path_len)
{
    int fd = memfd_create("fuzz_txn_index", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    snprintf(path, path_len, "/proc/self/fd/%d", fd);
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 24)
        return 0;
    int64_t base = load_i64(data) & INT64_MAX;
    int64_t start = load_i64(data + 8), upper = load_i64(data + 16);
    const uint8_t *file = data + 24;
    size_t len = size - 24;

    const char *why = NULL;
    uint32_t bad = 0;
    int rc = txn_index_check(file, len, base, &why, &bad);
    if (rc != 0) {
        CHECK(rc == -EBADMSG && why != NULL);
        CHECK((size_t)bad * TXN_INDEX_ENTRY_BYTES <= len);
        CHECK(txn_index_check(file, (size_t)bad * TXN_INDEX_ENTRY_BYTES, base, NULL, NULL) == 0);
        return 0;
    }
    size_t n = len / TXN_INDEX_ENTRY_BYTES;

    char path[64];
    int fd = memfd_with(file, len, path, sizeof(path));
    if (fd < 0)
        return 0;
    struct txn_index idx = TXN_INDEX_INIT;
    CHECK(txn_index_open(&idx, path, base, 0, &why, &bad) == 0);
    CHECK(txn_index_count(&idx) == n);

    /* Kafka's linear collectAbortedTxns over the raw bytes. */
    struct seen want = {calloc(n + 1, sizeof(struct txn_index_entry)), 0, n + 1};
    struct seen got = {calloc(n + 1, sizeof(struct txn_index_entry)), 0, n + 1};
    CHECK(want.e != NULL && got.e != NULL);
    bool want_stop = false;
    if (upper <= start) {
        want_stop = true; /* documented: empty ranges report nothing */
    } else {
        for (size_t i = 0; i < n; i++) {
            struct txn_index_entry e = {load_i64(file + 34 * i + 2), load_i64(file + 34 * i + 10),
                                        load_i64(file + 34 * i + 18), load_i64(file + 34 * i + 26)};
            if (e.last_offset >= start && e.first_offset < upper)
                push(&want, &e);
            if (e.last_stable_offset >= upper) {
                want_stop = true;
                break;
            }
        }
    }
    bool stop = !want_stop;
    CHECK(txn_index_collect(&idx, start, upper, push, &got, &stop) == 0);
    CHECK(stop == want_stop);
    CHECK(got.n == want.n);
    CHECK(got.n == 0 || memcmp(got.e, want.e, got.n * sizeof(got.e[0])) == 0);
    txn_index_close(&idx);

    /* Writable: append one more entry past the last, truncate at start, still valid. */
    CHECK(txn_index_open(&idx, path, base, TXN_INDEX_WRITABLE, &why, &bad) == 0);
    int64_t last = n > 0 ? load_i64(file + 34 * (n - 1) + 18) : base;
    if (last < INT64_MAX - 2) {
        struct txn_index_entry e = {1, last + 1, last + 2, last + 3};
        CHECK(txn_index_append(&idx, &e) == 0);
    }
    CHECK(txn_index_truncate_to(&idx, start) == 0);
    uint32_t kept = txn_index_count(&idx);
    txn_index_close(&idx);
    off_t end = lseek(fd, 0, SEEK_END);
    CHECK(end == (off_t)kept * TXN_INDEX_ENTRY_BYTES);
    uint8_t *buf = malloc((size_t)end + 1);
    CHECK(buf != NULL);
    CHECK(pread(fd, buf, (size_t)end, 0) == end);
    CHECK(txn_index_check(buf, (size_t)end, base, NULL, NULL) == 0);
    free(buf);
    free(want.e);
    free(got.e);
    close(fd);
    return 0;
}
