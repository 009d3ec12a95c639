/*
 * test_util.c — scratch directories, backend selection, the RT_TEST_FILTER case filter and file
 * helpers for the tests. Test support only: aborts on failure instead of returning errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* RT_TEST_FILTER=pattern runs only the cases of a test program whose names match it (cmocka's
 * test filter: `*` matches any run of characters, `?` one character), e.g.
 * RT_TEST_FILTER='test_fetch_*' build/release/test_contract. Every test program links this file,
 * so the filter is set here, before main, and no program has to ask for it. */
__attribute__((constructor)) static void tu_test_filter_from_env(void)
{
    const char *pattern = getenv("RT_TEST_FILTER");
    if (pattern && *pattern)
        cmocka_set_test_filter(pattern);
}

static void die(const char *what, const char *path)
{
    fprintf(stderr, "test_util: %s %s: %s\n", what, path ? path : "", strerror(errno));
    abort();
}

char *tu_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char *p = tu_path("%s/rt-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(p))
        die("mkdtemp", p);
    return p;
}

void tu_rmdir_free(char *path)
{
    if (!path)
        return;
    if (getenv("RT_TEST_KEEP") == NULL)
        tu_system("rm -rf '%s'", path);
    free(path);
}

unsigned tu_sweep_stride(void)
{
    const char *v = getenv("RT_TEST_SWEEP_STRIDE");
    long n = v ? strtol(v, NULL, 10) : 1;
    return n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
}

bool tu_sweep_takes(unsigned index)
{
    unsigned stride = tu_sweep_stride();
    unsigned phase = strcmp(tu_backend(), "sync") == 0 ? 1 : 0;
    return stride == 1 || index % stride == phase % stride;
}

static bool sweep_split(void)
{
    return tu_sweep_stride() > 1 && getenv("RT_TEST_IO") != NULL;
}

unsigned tu_sweep_first(void)
{
    return sweep_split() && strcmp(tu_backend(), "sync") == 0 ? 1 + tu_sweep_stride() : 1;
}

unsigned tu_sweep_step(void)
{
    return sweep_split() ? 2 * tu_sweep_stride() : tu_sweep_stride();
}

const char *tu_backend(void)
{
    const char *b = getenv("RT_TEST_IO");
    if (b && strcmp(b, "sync") == 0)
        return "sync";
    return "uring";
}

void tu_options(struct rt_options *opts)
{
    rt_options_init(opts);
    /* AUTO, not URING: a machine without io_uring still runs the suite over the fallback. */
    opts->io_backend = strcmp(tu_backend(), "sync") == 0 ? RT_IO_SYNC : RT_IO_AUTO;
}

void tu_options_small(struct rt_options *opts, uint64_t segment_bytes, uint32_t batch_max_bytes,
                      uint32_t index_interval_bytes)
{
    tu_options(opts);
    opts->segment_size_bytes = segment_bytes;
    opts->batch_size_max_bytes = batch_max_bytes;
    opts->index_interval_bytes = index_interval_bytes;
    opts->shard_count = 1;
    opts->retention_ms = -1;
    opts->producer_id_expiration_ms = INT64_MAX / 4;
}

size_t tu_file_size(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        die("stat", path);
    return (size_t)st.st_size;
}

void tu_flip_byte(const char *path, uint64_t offset, uint8_t mask)
{
    int fd = open(path, O_RDWR);
    if (fd < 0)
        die("open", path);
    uint8_t b;
    if (pread(fd, &b, 1, (off_t)offset) != 1)
        die("pread", path);
    b ^= mask;
    if (pwrite(fd, &b, 1, (off_t)offset) != 1)
        die("pwrite", path);
    close(fd);
}

void tu_truncate(const char *path, uint64_t size)
{
    if (truncate(path, (off_t)size) != 0)
        die("truncate", path);
}

uint8_t *tu_read_file(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("fopen", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        die("fread", path);
    fclose(f);
    *len_out = (size_t)n;
    return buf;
}

void tu_write_file(const char *path, const uint8_t *buf, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    if (len > 0)
        assert_int_equal(fwrite(buf, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

char *tu_path(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = NULL;
    if (vasprintf(&out, fmt, ap) < 0)
        die("vasprintf", NULL);
    va_end(ap);
    return out;
}

int tu_system(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *cmd = NULL;
    if (vasprintf(&cmd, fmt, ap) < 0)
        die("vasprintf", NULL);
    va_end(ap);
    int rc = system(cmd);
    free(cmd);
    if (rc == -1 || !WIFEXITED(rc))
        return -1;
    return WEXITSTATUS(rc);
}

bool fs_exists_for_test(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

uint32_t be32_of(const void *p)
{
    const uint8_t *b = p;
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

int64_t tu_fetch_next_offset(const struct rt_fetch_view *v, int64_t from)
{
    uint64_t pos = 0;
    int64_t next = from;
    while (pos + 27 <= v->size_bytes) {
        next = (int64_t)be64_of(v->data + pos) + (int32_t)be32_of(v->data + pos + 23) + 1;
        pos += 12 + be32_of(v->data + pos + 8);
    }
    return next;
}

void tu_value_of(int64_t offset, char *buf, size_t value_bytes)
{
    memset(buf, 'a' + (int)(offset % 26), value_bytes);
    snprintf(buf, 32, "offset-%020" PRId64, offset);
    buf[27] = '|';
}

int tu_append_offset_batch(rt_engine *e, const char *topic, int64_t first, int records,
                           size_t value_bytes, int64_t *base_out)
{
    char *vals = malloc((size_t)records * value_bytes);
    struct rt_record *recs = calloc((size_t)records, sizeof(*recs));
    if (!vals || !recs) {
        free(vals);
        free(recs);
        return -ENOMEM;
    }
    for (int i = 0; i < records; i++) {
        char *v = vals + (size_t)i * value_bytes;
        tu_value_of(first + i, v, value_bytes);
        recs[i] = (struct rt_record){.key_len = -1,
                                     .value = v,
                                     .value_len = (int32_t)value_bytes,
                                     .timestamp_ms = 1000000 + first + i};
    }
    int rc = rt_append(e, topic, 0, recs, (size_t)records, base_out);
    free(vals);
    free(recs);
    return rc;
}

int64_t tu_read_back_offset_values(rt_engine *e, const char *topic, size_t value_bytes,
                                   int64_t *start_out)
{
    int64_t start = -1, end = -1;
    assert_int_equal(rt_list_offsets(e, topic, 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &start),
                     0);
    assert_int_equal(rt_list_offsets(e, topic, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    char *want = malloc(value_bytes);
    assert_non_null(want);
    int64_t offset = start;
    while (offset < end) {
        rt_fetch *f = NULL;
        int rc = rt_fetch_start(e, topic, 0, offset, 1 << 20, RT_READ_UNCOMMITTED, &f);
        if (rc != 0)
            fail_msg("fetch at %" PRId64 ": %s (%s)", offset, rt_strerror(rc), rt_error_detail());
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, f, offset), 0);
        struct rt_record_view rv;
        int64_t before = offset;
        while ((rc = rt_records_next(&it, &rv)) == 0) {
            if (rv.offset != offset)
                fail_msg("record at offset %" PRId64 " where %" PRId64 " was due", rv.offset,
                         offset);
            tu_value_of(offset, want, value_bytes);
            if (rv.value_len != (int32_t)value_bytes || memcmp(rv.value, want, value_bytes) != 0)
                fail_msg("offset %" PRId64 " serves a value that is not its own: %.27s", offset,
                         (const char *)rv.value);
            offset++;
        }
        assert_int_equal(rc, RT_E_END);
        rt_fetch_release(f);
        assert_true(offset > before);
    }
    free(want);
    *start_out = start;
    return end;
}

uint64_t be64_of(const void *p)
{
    const uint8_t *b = p;
    return (uint64_t)be32_of(b) << 32 | be32_of(b + 4);
}

int tu_fixture_setup(void **state)
{
    struct tu_fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    f->dir = tu_mkdtemp();
    tu_options_small(&f->o, 64 * 1024, 16 * 1024, 512);
    f->o.shard_count = 2;
    *state = f;
    return 0;
}

int tu_fixture_teardown(void **state)
{
    struct tu_fixture *f = *state;
    if (f->e)
        rt_close(f->e);
    tu_rmdir_free(f->dir);
    free(f);
    return 0;
}

void tu_fixture_open(struct tu_fixture *f)
{
    int rc = rt_open(f->dir, &f->o, &f->e);
    if (rc)
        fprintf(stderr, "rt_open: %s: %s\n", rt_strerror(rc), rt_error_detail());
    assert_int_equal(rc, 0);
}

void tu_fixture_close(struct tu_fixture *f)
{
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
}
