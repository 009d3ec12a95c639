/*
 * fuzz_index.c — libFuzzer target for the offset index and time index readers. The input is a
 * raw index file. Both pure checkers run over it (they must never read out of bounds); a failure
 * must name an entry whose prefix is itself valid. When a check passes, the bytes go into a
 * memfd that is opened through index/ read-only, and every lookup and truncation must agree with
 * a linear scan of the same bytes; then it is reopened writable, one more entry is appended,
 * the index is sealed and the result must still pass the checker.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "index/offset_index.h"
#include "index/time_index.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_index: %s:%d: %s\n", __FILE__, __LINE__, #cond);                 \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int64_t be64_signed(const uint8_t *p)
{
    uint64_t v = (uint64_t)be32(p) << 32 | be32(p + 4);
    int64_t out;
    memcpy(&out, &v, sizeof(out));
    return out;
}

/* Writes the bytes into a fresh memfd and returns a path that open(2) accepts, or -1. */
static int memfd_with(const uint8_t *data, size_t len, char *path, size_t path_len)
{
    int fd = memfd_create("fuzz_index", MFD_CLOEXEC);
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

static void read_back(int fd, uint8_t **buf, size_t *len)
{
    off_t end = lseek(fd, 0, SEEK_END);
    CHECK(end >= 0);
    *len = (size_t)end;
    *buf = malloc(*len + 1);
    CHECK(*buf != NULL);
    CHECK(pread(fd, *buf, *len, 0) == (ssize_t)*len);
}

/* ---- offset index ---- */

static void offset_expect(const uint8_t *data, uint32_t n, int64_t base, int64_t target,
                          const struct offset_index *idx)
{
    int64_t want_off = base;
    uint32_t want_pos = 0;
    for (uint32_t i = 0; i < n; i++) {
        int64_t off = base + (int32_t)be32(data + 8 * i);
        if (off <= target) {
            want_off = off;
            want_pos = be32(data + 8 * i + 4);
        }
    }
    int64_t got_off;
    uint32_t got_pos;
    offset_index_lookup(idx, target, &got_off, &got_pos);
    CHECK(got_off == want_off);
    CHECK(got_pos == want_pos);
}

static void fuzz_offset(const uint8_t *data, size_t size, int64_t base)
{
    const char *why = NULL;
    uint32_t bad = 0;
    uint64_t log_size = (uint64_t)size * 512 + 1;
    int rc = offset_index_check(data, size, log_size, &why, &bad);
    CHECK(rc == 0 || rc == -EBADMSG);
    CHECK((rc == 0) == (why == NULL));
    if (rc != 0) {
        CHECK(bad <= size / 8);
        /* Every failure but the length names an entry whose prefix is valid. */
        if (size % 8 == 0)
            CHECK(offset_index_check(data, (size_t)bad * 8, log_size, NULL, NULL) == 0);
        return;
    }
    /* A bound on positions only removes files from the valid set. */
    CHECK(offset_index_check(data, size, 0, NULL, NULL) == 0);

    char path[64];
    int fd = memfd_with(data, size, path, sizeof(path));
    if (fd < 0)
        return;
    uint32_t n = (uint32_t)(size / 8);
    struct offset_index idx = OFFSET_INDEX_INIT;
    CHECK(offset_index_open(&idx, path, base, 0, false, 0) == 0);
    CHECK(idx.file.entries == n);
    offset_expect(data, n, base, INT64_MIN, &idx);
    offset_expect(data, n, base, base - 1, &idx);
    offset_expect(data, n, base, INT64_MAX, &idx);
    for (uint32_t i = 0; i < n; i++) {
        int64_t off = base + (int32_t)be32(data + 8 * i);
        offset_expect(data, n, base, off - 1, &idx);
        offset_expect(data, n, base, off, &idx);
        offset_expect(data, n, base, off + 1, &idx);
    }
    if (n > 0) {
        /* Truncation keeps exactly the entries below the cut. */
        int64_t cut = base + (int32_t)be32(data + 8 * (n / 2)) + (size & 1);
        uint32_t keep = 0;
        while (keep < n && base + (int32_t)be32(data + 8 * keep) < cut)
            keep++;
        offset_index_truncate_offset(&idx, cut);
        CHECK(idx.file.entries == keep);
    }
    offset_index_close(&idx);

    /* Writable reopen of the same bytes: one more entry, seal, still valid. */
    CHECK(offset_index_open(&idx, path, base, size + 64, true, UINT32_MAX) == 0);
    CHECK(idx.file.entries == n);
    int64_t next_off = n ? base + (int32_t)be32(data + 8 * (n - 1)) + 1 : base;
    uint32_t next_pos = n ? be32(data + 8 * (n - 1) + 4) + 1 : 0;
    rc = offset_index_append(&idx, next_off, next_pos);
    CHECK(rc == 0 || (rc == -EINVAL && (next_off - base > INT32_MAX || next_pos > INT32_MAX)));
    CHECK(offset_index_seal(&idx) == 0);
    offset_index_close(&idx);
    uint8_t *after;
    size_t after_len;
    read_back(fd, &after, &after_len);
    CHECK(after_len == (size_t)(n + (rc == 0)) * 8);
    CHECK(memcmp(after, data, size) == 0);
    CHECK(offset_index_check(after, after_len, 0, &why, &bad) == 0);
    free(after);
    close(fd);
}

/* ---- time index ---- */

static void time_expect(const uint8_t *data, uint32_t n, int64_t base, int64_t target,
                        const struct time_index *idx)
{
    int64_t floor = base;
    int64_t first = 0;
    int want_rc = -ENOENT;
    for (uint32_t i = 0; i < n; i++) {
        int64_t ts = be64_signed(data + 12 * i);
        int64_t off = base + (int32_t)be32(data + 12 * i + 8);
        if (ts <= target)
            floor = off;
        if (ts >= target && want_rc != 0) {
            want_rc = 0;
            first = off;
        }
    }
    if (want_rc != 0)
        first = floor;
    int64_t got_off, got_floor;
    CHECK(time_index_lookup(idx, target, &got_off, &got_floor) == want_rc);
    CHECK(got_off == first);
    CHECK(got_floor == floor);
}

static void fuzz_time(const uint8_t *data, size_t size, int64_t base)
{
    const char *why = NULL;
    uint32_t bad = 0;
    int rc = time_index_check(data, size, &why, &bad);
    CHECK(rc == 0 || rc == -EBADMSG);
    CHECK((rc == 0) == (why == NULL));
    if (rc != 0) {
        CHECK(bad <= size / 12);
        if (size % 12 == 0)
            CHECK(time_index_check(data, (size_t)bad * 12, NULL, NULL) == 0);
        return;
    }

    char path[64];
    int fd = memfd_with(data, size, path, sizeof(path));
    if (fd < 0)
        return;
    uint32_t n = (uint32_t)(size / 12);
    struct time_index idx = TIME_INDEX_INIT;
    CHECK(time_index_open(&idx, path, base, 0, false, 0) == 0);
    CHECK(idx.file.entries == n);
    CHECK(time_index_max_timestamp(&idx) == (n ? be64_signed(data + 12 * (n - 1)) : -1));
    time_expect(data, n, base, INT64_MIN, &idx);
    time_expect(data, n, base, INT64_MAX, &idx);
    for (uint32_t i = 0; i < n; i++) {
        int64_t ts = be64_signed(data + 12 * i);
        time_expect(data, n, base, ts - 1, &idx); /* ts >= 0: no overflow */
        time_expect(data, n, base, ts, &idx);
        if (ts < INT64_MAX)
            time_expect(data, n, base, ts + 1, &idx);
    }
    if (n > 0) {
        int64_t cut = base + (int32_t)be32(data + 12 * (n / 2) + 8) + (size & 1);
        uint32_t keep = 0;
        while (keep < n && base + (int32_t)be32(data + 12 * keep + 8) < cut)
            keep++;
        time_index_truncate_offset(&idx, cut);
        CHECK(idx.file.entries == keep);
    }
    time_index_close(&idx);

    CHECK(time_index_open(&idx, path, base, size + 64, true, UINT32_MAX) == 0);
    int64_t last_ts = time_index_max_timestamp(&idx);
    int64_t last_off = n ? base + (int32_t)be32(data + 12 * (n - 1) + 8) : base;
    rc = time_index_append(&idx, last_ts, last_off); /* not a new maximum: ignored */
    CHECK(rc == 0 && idx.file.entries == n);
    if (last_ts < INT64_MAX)
        CHECK(time_index_append(&idx, last_ts + 1, last_off) == 0);
    CHECK(time_index_seal(&idx) == 0);
    time_index_close(&idx);
    uint8_t *after;
    size_t after_len;
    read_back(fd, &after, &after_len);
    CHECK(after_len == (size_t)(n + (last_ts < INT64_MAX)) * 12);
    CHECK(memcmp(after, data, size) == 0);
    CHECK(time_index_check(after, after_len, NULL, NULL) == 0);
    free(after);
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    /* Two bases: 0, and the largest for which base + relativeOffset + 1 still fits. */
    int64_t base = (size & 2) ? INT64_MAX - INT32_MAX - 1 : 0;
    fuzz_offset(data, size, base);
    fuzz_time(data, size, base);
    return 0;
}
