/*
 * test_index.c — the offset index and the time index (index/offset_index.c, index/time_index.c):
 * lookups at every boundary, capacity, misuse, truncation, seal and reopen, the exact bytes of
 * Kafka's encoding, and the pure checkers against each corruption class. Pure file tests: they
 * run once, not once per io backend. Invariant numbers refer to the tops of the .c files
 * (IF1-IF5 index_file.h, OI1 offset_index.c, TI1-TI2 time_index.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/test_util.h"
#include "index/offset_index.h"
#include "index/time_index.h"

/* test_util.c calls rt_options_init; until the engine defines it, this keeps the test linking.
 * A strong definition in libringtail wins. */
__attribute__((weak)) void rt_options_init(struct rt_options *opts)
{
    memset(opts, 0, sizeof(*opts));
}

#define BASE 1000

struct fixture {
    char *dir;
    char *index_path;
    char *time_path;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->dir = tu_mkdtemp();
    f->index_path = tu_path("%s/%020d.index", f->dir, BASE);
    f->time_path = tu_path("%s/%020d.timeindex", f->dir, BASE);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    free(f->index_path);
    free(f->time_path);
    tu_rmdir_free(f->dir);
    free(f);
    return 0;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

static void expect_lookup(const struct offset_index *idx, int64_t target, int64_t offset,
                          uint32_t position)
{
    int64_t off = -7;
    uint32_t pos = 7;
    offset_index_lookup(idx, target, &off, &pos);
    assert_int_equal(off, offset);
    assert_int_equal(pos, position);
}

/* Three entries: (BASE+10, 100), (BASE+20, 200), (BASE+30, 300). */
static void fill3(struct offset_index *idx)
{
    assert_int_equal(offset_index_append(idx, BASE + 10, 100), 0);
    assert_int_equal(offset_index_append(idx, BASE + 20, 200), 0);
    assert_int_equal(offset_index_append(idx, BASE + 30, 300), 0);
    assert_int_equal(idx->file.entries, 3);
}

static void expect_fill3(const struct offset_index *idx)
{
    assert_int_equal(idx->file.entries, 3);
    expect_lookup(idx, INT64_MIN, BASE, 0);
    expect_lookup(idx, BASE - 1, BASE, 0);
    expect_lookup(idx, BASE, BASE, 0);
    expect_lookup(idx, BASE + 9, BASE, 0);
    expect_lookup(idx, BASE + 10, BASE + 10, 100);
    expect_lookup(idx, BASE + 11, BASE + 10, 100);
    expect_lookup(idx, BASE + 19, BASE + 10, 100);
    expect_lookup(idx, BASE + 20, BASE + 20, 200);
    expect_lookup(idx, BASE + 25, BASE + 20, 200);
    expect_lookup(idx, BASE + 30, BASE + 30, 300);
    expect_lookup(idx, BASE + 31, BASE + 30, 300);
    expect_lookup(idx, (int64_t)BASE + INT32_MAX + 5, BASE + 30, 300);
    expect_lookup(idx, INT64_MAX, BASE + 30, 300);
    int64_t off;
    uint32_t pos;
    offset_index_entry(idx, 1, &off, &pos);
    assert_int_equal(off, BASE + 20);
    assert_int_equal(pos, 200);
}

/* ---- offset index ------------------------------------------------------------------------ */

static void test_offset_empty_lookup(void **state)
{
    struct fixture *f = *state;
    struct offset_index idx;
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 80, true, UINT32_MAX), 0);
    assert_int_equal(idx.file.entries, 0);
    assert_int_equal(idx.file.entries_max, 10);
    assert_int_equal(tu_file_size(f->index_path), 80); /* preallocated */
    assert_false(offset_index_full(&idx));
    expect_lookup(&idx, INT64_MIN, BASE, 0);
    expect_lookup(&idx, BASE, BASE, 0);
    expect_lookup(&idx, BASE + 5, BASE, 0);
    expect_lookup(&idx, INT64_MAX, BASE, 0);
    assert_int_equal(offset_index_sync(&idx), 0);
    offset_index_close(&idx);
    assert_int_equal(tu_file_size(f->index_path), 0); /* close trims, as Kafka's does */
}

static void test_offset_lookup_boundaries(void **state)
{
    struct fixture *f = *state;
    struct offset_index idx;
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 4096, true, UINT32_MAX), 0);
    fill3(&idx);
    expect_fill3(&idx);
    assert_int_equal(offset_index_sync(&idx), 0);
    offset_index_close(&idx);
}

static void test_offset_full_at_capacity(void **state)
{
    struct fixture *f = *state;
    struct offset_index idx;
    /* 27 bytes round down to 3 entries. */
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 27, true, UINT32_MAX), 0);
    assert_int_equal(idx.file.entries_max, 3);
    assert_int_equal(tu_file_size(f->index_path), 24);
    assert_int_equal(offset_index_append(&idx, BASE + 10, 100), 0);
    assert_int_equal(offset_index_append(&idx, BASE + 20, 200), 0);
    assert_false(offset_index_full(&idx));
    assert_int_equal(offset_index_append(&idx, BASE + 30, 300), 0);
    assert_true(offset_index_full(&idx));
    assert_int_equal(offset_index_append(&idx, BASE + 40, 400), -ENOSPC);
    assert_int_equal(idx.file.entries, 3);
    expect_fill3(&idx); /* a full index answers like any other */
    offset_index_close(&idx);
}

static void test_offset_append_misuse(void **state)
{
    struct fixture *f = *state;
    struct offset_index idx;
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 4096, true, UINT32_MAX), 0);
    assert_int_equal(offset_index_append(&idx, BASE - 1, 10), -EINVAL);
    assert_int_equal(offset_index_append(&idx, (int64_t)BASE + INT32_MAX + 1, 10), -EINVAL);
    assert_int_equal(offset_index_append(&idx, BASE + 1, (uint32_t)INT32_MAX + 1), -EINVAL);
    assert_int_equal(idx.file.entries, 0);
    assert_int_equal(offset_index_append(&idx, BASE + 10, 100), 0);
    assert_int_equal(offset_index_append(&idx, BASE + 10, 200), -EINVAL); /* equal offset */
    assert_int_equal(offset_index_append(&idx, BASE + 9, 200), -EINVAL);  /* smaller offset */
    assert_int_equal(offset_index_append(&idx, BASE + 11, 100), -EINVAL); /* equal position */
    assert_int_equal(offset_index_append(&idx, BASE + 11, 99), -EINVAL);  /* smaller position */
    assert_int_equal(idx.file.entries, 1);
    assert_int_equal(offset_index_append(&idx, (int64_t)BASE + INT32_MAX, INT32_MAX), 0);
    assert_int_equal(idx.file.entries, 2);
    offset_index_close(&idx);
}

static void test_offset_base_entry_allowed(void **state)
{
    /* Kafka's toRelative accepts relative offset 0: an entry (base, 0) is legal, if useless. */
    struct fixture *f = *state;
    struct offset_index idx;
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 4096, true, UINT32_MAX), 0);
    assert_int_equal(offset_index_append(&idx, BASE, 0), 0);
    expect_lookup(&idx, BASE, BASE, 0);
    assert_int_equal(offset_index_seal(&idx), 0);
    offset_index_close(&idx);
    size_t len;
    uint8_t *buf = tu_read_file(f->index_path, &len);
    assert_int_equal(len, 8);
    assert_int_equal(offset_index_check(buf, len, 0, NULL, NULL), 0);
    free(buf);
}

static void test_offset_truncate(void **state)
{
    struct fixture *f = *state;
    struct offset_index idx;
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 4096, true, UINT32_MAX), 0);
    fill3(&idx);
    offset_index_truncate_offset(&idx, BASE + 31); /* past the last entry: nothing */
    assert_int_equal(idx.file.entries, 3);
    offset_index_truncate_offset(&idx, BASE + 30); /* at an entry: it goes */
    assert_int_equal(idx.file.entries, 2);
    expect_lookup(&idx, BASE + 30, BASE + 20, 200);
    offset_index_truncate_offset(&idx, BASE + 15); /* between entries */
    assert_int_equal(idx.file.entries, 1);
    expect_lookup(&idx, BASE + 30, BASE + 10, 100);
    /* appends resume after the cut, with offsets the dropped entries had */
    assert_int_equal(offset_index_append(&idx, BASE + 12, 150), 0);
    expect_lookup(&idx, BASE + 13, BASE + 12, 150);
    offset_index_truncate_offset(&idx, BASE + 10);
    assert_int_equal(idx.file.entries, 0);
    fill3(&idx);
    offset_index_truncate_offset(&idx, BASE); /* at base: everything */
    assert_int_equal(idx.file.entries, 0);
    fill3(&idx);
    offset_index_truncate_offset(&idx, INT64_MIN);
    assert_int_equal(idx.file.entries, 0);
    fill3(&idx);
    offset_index_truncate_offset(&idx, INT64_MAX);
    assert_int_equal(idx.file.entries, 3);
    offset_index_close(&idx);
    assert_int_equal(tu_file_size(f->index_path), 24);
}

static void test_offset_reset(void **state)
{
    struct fixture *f = *state;
    struct offset_index idx;
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 4096, true, UINT32_MAX), 0);
    fill3(&idx);
    offset_index_reset(&idx);
    assert_int_equal(idx.file.entries, 0);
    expect_lookup(&idx, BASE + 30, BASE, 0);
    fill3(&idx);
    expect_fill3(&idx);
    offset_index_close(&idx);
}

static void test_offset_seal_and_reopen(void **state)
{
    struct fixture *f = *state;
    struct offset_index idx;
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 4096, true, UINT32_MAX), 0);
    fill3(&idx);
    assert_int_equal(offset_index_seal(&idx), 0);
    assert_int_equal(tu_file_size(f->index_path), 24);
    assert_false(idx.file.writable);
    assert_true(offset_index_full(&idx));
    assert_int_equal(offset_index_append(&idx, BASE + 40, 400), -EROFS);
    assert_int_equal(offset_index_seal(&idx), 0); /* sealing twice is a no-op */
    assert_int_equal(offset_index_sync(&idx), 0);
    expect_fill3(&idx);
    offset_index_close(&idx);
    assert_int_equal(tu_file_size(f->index_path), 24);

    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 0, false, 0), 0);
    assert_false(idx.file.writable);
    assert_int_equal(idx.file.map_bytes, 24);
    expect_fill3(&idx);
    offset_index_close(&idx);

    /* writable reopen after a clean trim: all entries, capacity restored, appends continue */
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 4096, true, UINT32_MAX), 0);
    assert_int_equal(idx.file.entries_max, 512);
    assert_int_equal(tu_file_size(f->index_path), 4096);
    expect_fill3(&idx);
    assert_int_equal(offset_index_append(&idx, BASE + 40, 400), 0);
    assert_int_equal(offset_index_seal(&idx), 0);
    assert_int_equal(idx.file.entries, 4);
    offset_index_close(&idx);
    assert_int_equal(tu_file_size(f->index_path), 32);
}

static void test_offset_seal_keeps_address(void **state)
{
    /* IF5: lock-free readers keep a pointer to the mapping; sealing must not move it. 600 entries
     * span two pages, so the kept head and the unmapped tail both get exercised. */
    struct fixture *f = *state;
    struct offset_index idx;
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 65536, true, UINT32_MAX), 0);
    for (uint32_t i = 0; i < 600; i++)
        assert_int_equal(offset_index_append(&idx, BASE + 1 + i, 100 * (i + 1)), 0);
    const uint8_t *reader = idx.file.map;
    assert_int_equal(offset_index_seal(&idx), 0);
    assert_ptr_equal(idx.file.map, reader);
    assert_int_equal(idx.file.map_bytes, 4800);
    assert_int_equal(tu_file_size(f->index_path), 4800);
    /* the last entry, read through the pointer taken before the seal */
    static const uint8_t last[8] = {0, 0, 0x02, 0x58, 0, 0, 0xEA, 0x60}; /* rel 600, pos 60000 */
    assert_memory_equal(reader + 599 * 8, last, 8);
    expect_lookup(&idx, BASE + 600, BASE + 600, 60000);
    expect_lookup(&idx, BASE + 1000, BASE + 600, 60000);
    offset_index_close(&idx);

    /* an empty index seals to nothing mapped */
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 65536, true, 0), 0);
    assert_int_equal(offset_index_seal(&idx), 0);
    assert_null(idx.file.map);
    assert_int_equal(tu_file_size(f->index_path), 0);
    expect_lookup(&idx, BASE + 5, BASE, 0);
    offset_index_close(&idx);
}

static void test_offset_reopen_fewer_live_entries(void **state)
{
    struct fixture *f = *state;
    struct offset_index idx;
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 4096, true, UINT32_MAX), 0);
    fill3(&idx);
    offset_index_close(&idx);

    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 4096, true, 5), -EBADMSG);
    assert_int_equal(idx.file.fd, -1); /* a failed open leaves a closed struct */
    offset_index_close(&idx);

    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 4096, true, 1), 0);
    assert_int_equal(idx.file.entries, 1);
    expect_lookup(&idx, BASE + 30, BASE + 10, 100);
    /* the slots past the live entries read as zeros again (no stale entries survive) */
    size_t len;
    uint8_t *buf = tu_read_file(f->index_path, &len);
    assert_int_equal(len, 4096);
    for (size_t i = 8; i < len; i++)
        assert_int_equal(buf[i], 0);
    free(buf);
    assert_int_equal(offset_index_append(&idx, BASE + 20, 250), 0);
    offset_index_close(&idx);
    assert_int_equal(tu_file_size(f->index_path), 16);
}

static void test_offset_capacity_smaller_than_live(void **state)
{
    /* A smaller configured capacity than the entries on disk: keep them all, report full. */
    struct fixture *f = *state;
    struct offset_index idx;
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 4096, true, UINT32_MAX), 0);
    fill3(&idx);
    offset_index_close(&idx);
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 16, true, UINT32_MAX), 0);
    assert_int_equal(idx.file.entries_max, 3);
    assert_true(offset_index_full(&idx));
    expect_fill3(&idx);
    offset_index_close(&idx);
}

static void test_offset_kafka_bytes(void **state)
{
    struct fixture *f = *state;
    struct offset_index idx;
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 4096, true, UINT32_MAX), 0);
    assert_int_equal(offset_index_append(&idx, BASE + 5, 4096), 0);
    assert_int_equal(offset_index_append(&idx, BASE + 0x01020304, 0x0A0B0C0D), 0);
    assert_int_equal(offset_index_seal(&idx), 0);
    offset_index_close(&idx);
    static const uint8_t want[16] = {
        0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x10, 0x00, /* rel 5, position 4096 */
        0x01, 0x02, 0x03, 0x04, 0x0A, 0x0B, 0x0C, 0x0D, /* rel 0x01020304, pos 0x0A0B0C0D */
    };
    size_t len;
    uint8_t *buf = tu_read_file(f->index_path, &len);
    assert_int_equal(len, sizeof(want));
    assert_memory_equal(buf, want, sizeof(want));
    assert_int_equal(offset_index_check(buf, len, 0x0A0B0C0E, NULL, NULL), 0);
    free(buf);
}

static void test_offset_open_errors(void **state)
{
    struct fixture *f = *state;
    struct offset_index idx;
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 0, false, 0), -ENOENT);
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 7, true, UINT32_MAX), -EINVAL);
    assert_int_equal(offset_index_open(&idx, f->index_path, -1, 4096, true, UINT32_MAX), -EINVAL);
    assert_int_equal(
        offset_index_open(&idx, f->index_path, BASE, (size_t)INT32_MAX + 1, true, UINT32_MAX),
        -EINVAL);
    offset_index_close(&idx);

    /* an empty file opens read-only with nothing mapped */
    tu_write_file(f->index_path, NULL, 0);
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 0, false, 0), 0);
    assert_null(idx.file.map);
    assert_int_equal(idx.file.map_bytes, 0);
    assert_int_equal(idx.file.entries, 0);
    assert_true(offset_index_full(&idx));
    expect_lookup(&idx, BASE + 100, BASE, 0);
    assert_int_equal(offset_index_seal(&idx), 0);
    offset_index_close(&idx);

    /* odd size: read-only and writable-with-whole-file refuse it */
    static const uint8_t odd[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2};
    tu_write_file(f->index_path, odd, sizeof(odd));
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 0, false, 0), -EBADMSG);
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 64, true, UINT32_MAX), -EBADMSG);
    /* ... but a caller that knows the live count may reuse the file */
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 64, true, 1), 0);
    expect_lookup(&idx, BASE + 1, BASE + 1, 1);
    offset_index_close(&idx);
    assert_int_equal(tu_file_size(f->index_path), 8);
}

static void test_offset_close_safety(void **state)
{
    (void)state;
    struct offset_index idx = OFFSET_INDEX_INIT;
    offset_index_close(&idx);
    offset_index_close(&idx);
    assert_int_equal(idx.file.fd, -1);
    offset_index_close(NULL);
}

static void test_offset_many_entries_match_linear_scan(void **state)
{
    /* 5000 entries: lookups land both in Kafka's warm section (last 1024) and before it. */
    struct fixture *f = *state;
    struct offset_index idx;
    enum { N = 5000 };
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, N * OFFSET_INDEX_ENTRY_BYTES,
                                       true, UINT32_MAX),
                     0);
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(offset_index_append(&idx, BASE + 1 + 3 * (int64_t)i, 7 + 4096 * i), 0);
    assert_true(offset_index_full(&idx));
    for (int64_t t = BASE - 2; t < BASE + 3 * N + 3; t++) {
        if ((t - BASE) % 97 != 0 && t <= BASE + 3 * (N - 1030))
            continue;
        int64_t want_off = BASE;
        uint32_t want_pos = 0;
        for (uint32_t i = 0; i < N; i++) {
            int64_t off = BASE + 1 + 3 * (int64_t)i;
            if (off > t)
                break;
            want_off = off;
            want_pos = 7 + 4096 * i;
        }
        expect_lookup(&idx, t, want_off, want_pos);
    }
    offset_index_truncate_offset(&idx, BASE + 1 + 3 * 4500);
    assert_int_equal(idx.file.entries, 4500);
    offset_index_truncate_offset(&idx, BASE + 3 * 100);
    assert_int_equal(idx.file.entries, 100);
    offset_index_close(&idx);
}

/* Offset index entry bytes for the checker tests. */
static void put_oe(uint8_t *buf, uint32_t i, uint32_t rel, uint32_t pos)
{
    put_be32(buf + i * 8, rel);
    put_be32(buf + i * 8 + 4, pos);
}

static void expect_offset_bad(const uint8_t *buf, size_t len, uint64_t log_size, uint32_t entry,
                              const char *reason)
{
    const char *why = NULL;
    uint32_t bad = 12345;
    assert_int_equal(offset_index_check(buf, len, log_size, &why, &bad), -EBADMSG);
    assert_non_null(why);
    assert_string_equal(why, reason);
    assert_int_equal(bad, entry);
}

static void test_offset_check(void **state)
{
    (void)state;
    uint8_t buf[32] = {0};
    const char *why = "x";
    uint32_t bad = 9;
    assert_int_equal(offset_index_check(buf, 0, 0, &why, &bad), 0); /* empty is valid */
    assert_null(why);
    assert_int_equal(bad, 0);

    put_oe(buf, 0, 10, 100);
    put_oe(buf, 1, 20, 200);
    put_oe(buf, 2, 30, 300);
    put_oe(buf, 3, 40, 400);
    assert_int_equal(offset_index_check(buf, 32, 0, &why, &bad), 0);
    assert_int_equal(offset_index_check(buf, 32, 401, &why, &bad), 0);

    expect_offset_bad(buf, 31, 0, 3, "size is not a multiple of 8 bytes");
    expect_offset_bad(buf, 5, 0, 0, "size is not a multiple of 8 bytes");
    expect_offset_bad(buf, 32, 400, 3, "position past the end of the log");
    expect_offset_bad(buf, 32, 150, 1, "position past the end of the log");

    put_oe(buf, 2, 20, 300); /* equal offset */
    expect_offset_bad(buf, 32, 0, 2, "relative offset not increasing");
    put_oe(buf, 2, 15, 300); /* decreasing offset */
    expect_offset_bad(buf, 32, 0, 2, "relative offset not increasing");
    put_oe(buf, 2, 30, 200); /* equal position */
    expect_offset_bad(buf, 32, 0, 2, "position not increasing");
    put_oe(buf, 2, 30, 150); /* decreasing position */
    expect_offset_bad(buf, 32, 0, 2, "position not increasing");
    put_oe(buf, 2, 0xFFFFFFF0u, 300);
    expect_offset_bad(buf, 32, 0, 2, "negative relative offset");
    put_oe(buf, 2, 30, 0x80000000u);
    expect_offset_bad(buf, 32, 0, 2, "negative position");
    put_oe(buf, 2, 0, 0); /* an active index left untrimmed by a crash */
    put_oe(buf, 3, 0, 0);
    expect_offset_bad(buf, 32, 0, 2, "zero entry (preallocated space left untrimmed)");

    put_oe(buf, 0, 0, 0); /* a first entry (base, 0) is legal */
    assert_int_equal(offset_index_check(buf, 8, 0, &why, &bad), 0);
}

static void test_offset_untrimmed_file_reports_zero_tail(void **state)
{
    /* What a crash leaves: the preallocated file with its live entries then zeros. bad_entry is
     * the live count, so the engine may reopen writable with it (or rebuild). */
    struct fixture *f = *state;
    struct offset_index idx;
    assert_int_equal(offset_index_open(&idx, f->index_path, BASE, 4096, true, UINT32_MAX), 0);
    fill3(&idx);
    size_t len;
    uint8_t *buf = tu_read_file(f->index_path, &len); /* MAP_SHARED: visible to read(2) */
    assert_int_equal(len, 4096);
    expect_offset_bad(buf, len, 0, 3, "zero entry (preallocated space left untrimmed)");
    free(buf);
    offset_index_close(&idx);
}

/* ---- time index -------------------------------------------------------------------------- */

static void expect_time(const struct time_index *idx, int64_t target, int rc, int64_t offset,
                        int64_t floor)
{
    int64_t off = -7;
    int64_t fl = -7;
    assert_int_equal(time_index_lookup(idx, target, &off, &fl), rc);
    assert_int_equal(off, offset);
    assert_int_equal(fl, floor);
}

/* (100, BASE+10), (200, BASE+20), (300, BASE+30) */
static void tfill3(struct time_index *idx)
{
    assert_int_equal(time_index_append(idx, 100, BASE + 10), 0);
    assert_int_equal(time_index_append(idx, 200, BASE + 20), 0);
    assert_int_equal(time_index_append(idx, 300, BASE + 30), 0);
    assert_int_equal(idx->file.entries, 3);
}

static void expect_tfill3(const struct time_index *idx)
{
    assert_int_equal(idx->file.entries, 3);
    assert_int_equal(time_index_max_timestamp(idx), 300);
    expect_time(idx, INT64_MIN, 0, BASE + 10, BASE);
    expect_time(idx, -1, 0, BASE + 10, BASE);
    expect_time(idx, 99, 0, BASE + 10, BASE);       /* before the first */
    expect_time(idx, 100, 0, BASE + 10, BASE + 10); /* exactly the first */
    expect_time(idx, 101, 0, BASE + 20, BASE + 10); /* between */
    expect_time(idx, 199, 0, BASE + 20, BASE + 10);
    expect_time(idx, 200, 0, BASE + 20, BASE + 20);       /* exactly the second */
    expect_time(idx, 300, 0, BASE + 30, BASE + 30);       /* exactly the last */
    expect_time(idx, 301, -ENOENT, BASE + 30, BASE + 30); /* after the last */
    expect_time(idx, INT64_MAX, -ENOENT, BASE + 30, BASE + 30);
    int64_t ts, off;
    time_index_entry(idx, 1, &ts, &off);
    assert_int_equal(ts, 200);
    assert_int_equal(off, BASE + 20);
    assert_int_equal(time_index_lookup(idx, 150, NULL, NULL), 0);
}

static void test_time_empty_lookup(void **state)
{
    struct fixture *f = *state;
    struct time_index idx;
    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 120, true, UINT32_MAX), 0);
    assert_int_equal(idx.file.entries_max, 10);
    assert_int_equal(time_index_max_timestamp(&idx), -1);
    expect_time(&idx, INT64_MIN, -ENOENT, BASE, BASE);
    expect_time(&idx, 0, -ENOENT, BASE, BASE);
    expect_time(&idx, INT64_MAX, -ENOENT, BASE, BASE);
    assert_int_equal(time_index_sync(&idx), 0);
    time_index_close(&idx);
    assert_int_equal(tu_file_size(f->time_path), 0);
}

static void test_time_lookup_boundaries(void **state)
{
    struct fixture *f = *state;
    struct time_index idx;
    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 4096, true, UINT32_MAX), 0);
    tfill3(&idx);
    expect_tfill3(&idx);
    time_index_close(&idx);
}

static void test_time_ignores_non_increasing(void **state)
{
    struct fixture *f = *state;
    struct time_index idx;
    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 4096, true, UINT32_MAX), 0);
    /* NO_TIMESTAMP (-1) and below are never indexed (Kafka's lastEntry starts at -1) */
    assert_int_equal(time_index_append(&idx, -1, BASE + 1), 0);
    assert_int_equal(time_index_append(&idx, INT64_MIN, BASE + 1), 0);
    assert_int_equal(idx.file.entries, 0);
    assert_int_equal(time_index_append(&idx, 0, BASE), 0); /* 0 is a timestamp; base is legal */
    assert_int_equal(idx.file.entries, 1);
    assert_int_equal(time_index_append(&idx, 100, BASE + 10), 0);
    assert_int_equal(time_index_append(&idx, 100, BASE + 11), 0); /* equal: ignored */
    assert_int_equal(time_index_append(&idx, 50, BASE + 12), 0);  /* older: ignored */
    assert_int_equal(idx.file.entries, 2);
    assert_int_equal(time_index_max_timestamp(&idx), 100);
    /* a larger timestamp at the same offset is a new entry (offsets only non-decreasing) */
    assert_int_equal(time_index_append(&idx, 150, BASE + 10), 0);
    assert_int_equal(idx.file.entries, 3);
    /* offsets may not go back, even when the append would be ignored */
    assert_int_equal(time_index_append(&idx, 200, BASE + 9), -EINVAL);
    assert_int_equal(time_index_append(&idx, 10, BASE + 9), -EINVAL);
    assert_int_equal(time_index_append(&idx, 200, BASE - 1), -EINVAL);
    assert_int_equal(time_index_append(&idx, 200, (int64_t)BASE + INT32_MAX + 1), -EINVAL);
    assert_int_equal(idx.file.entries, 3);
    assert_int_equal(time_index_append(&idx, INT64_MAX, (int64_t)BASE + INT32_MAX), 0);
    assert_int_equal(time_index_max_timestamp(&idx), INT64_MAX);
    time_index_close(&idx);
}

static void test_time_full_reserves_last_slot(void **state)
{
    struct fixture *f = *state;
    struct time_index idx;
    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 36 + 11, true, UINT32_MAX), 0);
    assert_int_equal(idx.file.entries_max, 3);
    assert_int_equal(time_index_append(&idx, 100, BASE + 10), 0);
    assert_false(time_index_full(&idx));
    assert_int_equal(time_index_append(&idx, 200, BASE + 20), 0);
    assert_true(time_index_full(&idx)); /* TI2: roll now, one slot left for the seal */
    assert_int_equal(time_index_append(&idx, 300, BASE + 30), 0);
    assert_true(time_index_full(&idx));
    assert_int_equal(time_index_append(&idx, 400, BASE + 40), -ENOSPC);
    assert_int_equal(time_index_append(&idx, 300, BASE + 40), 0); /* a no-op needs no slot */
    expect_tfill3(&idx);
    assert_int_equal(time_index_seal(&idx), 0);
    assert_int_equal(tu_file_size(f->time_path), 36);
    time_index_close(&idx);
}

static void test_time_truncate_and_reset(void **state)
{
    struct fixture *f = *state;
    struct time_index idx;
    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 4096, true, UINT32_MAX), 0);
    tfill3(&idx);
    time_index_truncate_offset(&idx, BASE + 31);
    assert_int_equal(idx.file.entries, 3);
    time_index_truncate_offset(&idx, BASE + 30); /* at an entry */
    assert_int_equal(idx.file.entries, 2);
    assert_int_equal(time_index_max_timestamp(&idx), 200);
    time_index_truncate_offset(&idx, BASE + 15); /* between */
    assert_int_equal(idx.file.entries, 1);
    expect_time(&idx, 150, -ENOENT, BASE + 10, BASE + 10);
    /* a timestamp that was dropped may be indexed again */
    assert_int_equal(time_index_append(&idx, 120, BASE + 12), 0);
    assert_int_equal(idx.file.entries, 2);
    time_index_truncate_offset(&idx, BASE);
    assert_int_equal(idx.file.entries, 0);
    tfill3(&idx);
    time_index_reset(&idx);
    assert_int_equal(idx.file.entries, 0);
    assert_int_equal(time_index_max_timestamp(&idx), -1);
    tfill3(&idx);
    /* equal offsets: truncation drops every entry at or past the offset */
    assert_int_equal(time_index_append(&idx, 400, BASE + 30), 0);
    time_index_truncate_offset(&idx, BASE + 30);
    assert_int_equal(idx.file.entries, 2);
    time_index_close(&idx);
}

static void test_time_seal_and_reopen(void **state)
{
    struct fixture *f = *state;
    struct time_index idx;
    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 4096, true, UINT32_MAX), 0);
    tfill3(&idx);
    const uint8_t *reader = idx.file.map;
    assert_int_equal(time_index_seal(&idx), 0);
    assert_ptr_equal(idx.file.map, reader); /* IF5 */
    assert_int_equal(tu_file_size(f->time_path), 36);
    assert_int_equal(time_index_append(&idx, 400, BASE + 40), -EROFS);
    assert_true(time_index_full(&idx));
    expect_tfill3(&idx);
    time_index_close(&idx);

    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 0, false, 0), 0);
    expect_tfill3(&idx);
    time_index_close(&idx);

    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 4096, true, UINT32_MAX), 0);
    assert_int_equal(idx.file.entries_max, 341);
    expect_tfill3(&idx);
    time_index_close(&idx);

    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 4096, true, 2), 0);
    assert_int_equal(time_index_max_timestamp(&idx), 200);
    assert_int_equal(time_index_append(&idx, 250, BASE + 25), 0);
    time_index_close(&idx);
    assert_int_equal(tu_file_size(f->time_path), 36);
    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 4096, true, 4), -EBADMSG);
    time_index_close(&idx);

    struct time_index never = TIME_INDEX_INIT;
    time_index_close(&never);
    time_index_close(&never);
}

static void test_time_kafka_bytes(void **state)
{
    struct fixture *f = *state;
    struct time_index idx;
    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 4096, true, UINT32_MAX), 0);
    assert_int_equal(time_index_append(&idx, 1700000000000LL, BASE + 5), 0); /* 0x18BCFE56800 */
    assert_int_equal(time_index_append(&idx, 0x0102030405060708LL, BASE + 0x0A0B0C0D), 0);
    assert_int_equal(time_index_seal(&idx), 0);
    time_index_close(&idx);
    static const uint8_t want[24] = {
        0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00, 0x00, 0x00, 0x00, 0x05,
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x0A, 0x0B, 0x0C, 0x0D,
    };
    size_t len;
    uint8_t *buf = tu_read_file(f->time_path, &len);
    assert_int_equal(len, sizeof(want));
    assert_memory_equal(buf, want, sizeof(want));
    assert_int_equal(time_index_check(buf, len, NULL, NULL), 0);
    free(buf);
}

static void test_time_many_entries_match_linear_scan(void **state)
{
    struct fixture *f = *state;
    struct time_index idx;
    enum { N = 3000 };
    assert_int_equal(time_index_open(&idx, f->time_path, BASE, (N + 1) * TIME_INDEX_ENTRY_BYTES,
                                     true, UINT32_MAX),
                     0);
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(time_index_append(&idx, 10 + 5 * (int64_t)i, BASE + 2 * (int64_t)i), 0);
    for (int64_t t = 0; t < 10 + 5 * N + 5; t++) {
        if (t % 41 != 0 && t < 5 * (N - 700))
            continue;
        int64_t floor = BASE;
        int64_t first = -1;
        for (uint32_t i = 0; i < N; i++) {
            int64_t ts = 10 + 5 * (int64_t)i;
            if (ts <= t)
                floor = BASE + 2 * (int64_t)i;
            if (ts >= t && first < 0)
                first = BASE + 2 * (int64_t)i;
        }
        if (first < 0)
            expect_time(&idx, t, -ENOENT, floor, floor);
        else
            expect_time(&idx, t, 0, first, floor);
    }
    time_index_close(&idx);
}

static void put_te(uint8_t *buf, uint32_t i, uint64_t ts, uint32_t rel)
{
    put_be64(buf + i * 12, ts);
    put_be32(buf + i * 12 + 8, rel);
}

static void expect_time_bad(const uint8_t *buf, size_t len, uint32_t entry, const char *reason)
{
    const char *why = NULL;
    uint32_t bad = 12345;
    assert_int_equal(time_index_check(buf, len, &why, &bad), -EBADMSG);
    assert_non_null(why);
    assert_string_equal(why, reason);
    assert_int_equal(bad, entry);
}

static void test_time_check(void **state)
{
    (void)state;
    uint8_t buf[48] = {0};
    const char *why = "x";
    uint32_t bad = 9;
    assert_int_equal(time_index_check(buf, 0, &why, &bad), 0);
    assert_null(why);
    put_te(buf, 0, 100, 10);
    put_te(buf, 1, 200, 20);
    put_te(buf, 2, 300, 20); /* equal offsets are fine */
    put_te(buf, 3, 400, 40);
    assert_int_equal(time_index_check(buf, 48, &why, &bad), 0);
    assert_null(why);
    assert_int_equal(bad, 0);

    expect_time_bad(buf, 47, 3, "size is not a multiple of 12 bytes");
    expect_time_bad(buf, 8, 0, "size is not a multiple of 12 bytes");
    put_te(buf, 2, 200, 30); /* equal timestamp */
    expect_time_bad(buf, 48, 2, "timestamp not increasing");
    put_te(buf, 2, 150, 30); /* decreasing timestamp */
    expect_time_bad(buf, 48, 2, "timestamp not increasing");
    put_te(buf, 2, 300, 19); /* decreasing offset */
    expect_time_bad(buf, 48, 2, "relative offset decreasing");
    put_te(buf, 2, (uint64_t)-1, 30);
    expect_time_bad(buf, 48, 2, "negative timestamp");
    put_te(buf, 2, 300, 0x80000000u);
    expect_time_bad(buf, 48, 2, "negative relative offset");
    put_te(buf, 2, 0, 0);
    put_te(buf, 3, 0, 0);
    expect_time_bad(buf, 48, 2, "zero entry (preallocated space left untrimmed)");
    put_te(buf, 0, 0, 0); /* a first entry (0, base) is legal */
    assert_int_equal(time_index_check(buf, 12, NULL, NULL), 0);
}

/* format.md T5, time_index_live_entries: the rule verify and dump count entries by, the one
 * time_index_check applies — a trimmed file's all-zero entry 0 is the entry (0, base) a batch
 * with maxTimestamp 0 leaves (issue 20 A4: verify took it for zero fill and exited 1); trailing
 * all-zero entries after it are fill; in a file that may be preallocated entry 0 is fill too. */
static void test_time_live_entries(void **state)
{
    (void)state;
    uint8_t buf[48] = {0};
    assert_int_equal(time_index_live_entries(buf, 0, true), 0);
    assert_int_equal(time_index_live_entries(buf, 1, true), 1); /* the one entry (0, base) */
    assert_int_equal(time_index_check(buf, 12, NULL, NULL), 0);
    assert_int_equal(time_index_live_entries(buf, 1, false), 0); /* may be preallocated */
    assert_int_equal(time_index_live_entries(buf, 4, true), 1);
    assert_int_equal(time_index_live_entries(buf, 4, false), 0);
    put_te(buf, 1, 200, 20);
    assert_int_equal(time_index_live_entries(buf, 4, true), 2);
    assert_int_equal(time_index_live_entries(buf, 4, false), 2);
    assert_int_equal(time_index_check(buf, 24, NULL, NULL), 0);
    put_te(buf, 3, 0, 1); /* not all zero: an entry (check judges it) */
    assert_int_equal(time_index_live_entries(buf, 4, false), 4);
    put_te(buf, 0, 1, 0);
    put_te(buf, 3, 0, 0);
    assert_int_equal(time_index_live_entries(buf, 4, false), 2);
}

static void test_time_open_errors(void **state)
{
    struct fixture *f = *state;
    struct time_index idx;
    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 0, false, 0), -ENOENT);
    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 11, true, UINT32_MAX), -EINVAL);
    tu_write_file(f->time_path, NULL, 0);
    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 0, false, 0), 0);
    assert_null(idx.file.map);
    expect_time(&idx, 5, -ENOENT, BASE, BASE);
    time_index_close(&idx);
    static const uint8_t odd[13] = {0};
    tu_write_file(f->time_path, odd, sizeof(odd));
    assert_int_equal(time_index_open(&idx, f->time_path, BASE, 0, false, 0), -EBADMSG);
    time_index_close(&idx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_offset_empty_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_lookup_boundaries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_full_at_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_append_misuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_base_entry_allowed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_truncate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_seal_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_seal_keeps_address, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_reopen_fewer_live_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_capacity_smaller_than_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_kafka_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_open_errors, setup, teardown),
        cmocka_unit_test(test_offset_close_safety),
        cmocka_unit_test_setup_teardown(test_offset_many_entries_match_linear_scan, setup,
                                        teardown),
        cmocka_unit_test(test_offset_check),
        cmocka_unit_test_setup_teardown(test_offset_untrimmed_file_reports_zero_tail, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_time_empty_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_lookup_boundaries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_ignores_non_increasing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_full_reserves_last_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_truncate_and_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_seal_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_kafka_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_many_entries_match_linear_scan, setup, teardown),
        cmocka_unit_test(test_time_check),
        cmocka_unit_test(test_time_live_entries),
        cmocka_unit_test_setup_teardown(test_time_open_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
