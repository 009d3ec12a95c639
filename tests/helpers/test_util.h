/*
 * test_util.h — what every ringtail test shares: scratch directories under $TMPDIR that are
 * removed afterwards, the io backend chosen by RT_TEST_IO (uring|sync, default uring) and a few
 * file helpers. Tests include this after cmocka's headers.
 */
#ifndef RT_TEST_UTIL_H
#define RT_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringtail.h"

/* Makes a fresh empty directory and returns its path (static storage per call site is not
 * needed: the string is heap-allocated; free with tu_rmdir_free). */
char *tu_mkdtemp(void);
/* rm -rf path, then free(path). */
void tu_rmdir_free(char *path);

/* rt_options_init plus the backend from RT_TEST_IO. */
void tu_options(struct rt_options *opts);
/* tu_options for a test that wants many small files: segments of segment_bytes, batches up to
 * batch_max_bytes, an index entry per index_interval_bytes, one shard, no time retention and
 * producers that never expire (test batches carry 1970 timestamps). The test may adjust more. */
void tu_options_small(struct rt_options *opts, uint64_t segment_bytes, uint32_t batch_max_bytes,
                      uint32_t index_interval_bytes);
/* "uring" or "sync". */
const char *tu_backend(void);
/* The step of the exhaustive fault sweeps (power loss or EIO at the n-th op, n = 1, 1 + step,
 * ...; every sweep still runs until the operation passes its last op): RT_TEST_SWEEP_STRIDE,
 * 1 to 64, default 1. The Release stage of tools/test.sh sweeps every op; the sanitizer stages,
 * which look for memory and thread errors on the same paths, set 3. */
unsigned tu_sweep_stride(void);
/* For a matrix of independent cases (the damage matrix) under the same stride: whether case
 * `index` (0, 1, 2, ... in the matrix's order) runs here. Every case runs at stride 1; at stride
 * s, the cases with index % s == the backend's phase (uring 0, sync 1), so the two backends of
 * one stage together cover 2 of every s cases and never the same one. */
bool tu_sweep_takes(unsigned index);
/* The first op and the step of a sweep that both backends of one stage run (a test ctest runs
 * as _uring and _sync, RT_TEST_IO set): at stride 1, (1, 1); at stride s, (1 + phase * s, 2s)
 * with the backend's phase (uring 0, sync 1), so the two backends together sweep exactly the ops
 * 1, 1 + s, 1 + 2s, ... that one backend alone sweeps at stride s, each op once, in half the
 * time. A test run once (RT_TEST_IO unset) gets (1, s). */
unsigned tu_sweep_first(void);
unsigned tu_sweep_step(void);

/* Whole-file helpers; abort the test on failure. */
size_t tu_file_size(const char *path);
void tu_flip_byte(const char *path, uint64_t offset, uint8_t mask);
void tu_truncate(const char *path, uint64_t size);
/* Reads a whole file into a malloc'd buffer. */
uint8_t *tu_read_file(const char *path, size_t *len_out);
/* Writes len bytes of buf as the whole file path (created or truncated); fails the test when it
 * cannot. */
void tu_write_file(const char *path, const uint8_t *buf, size_t len);
/* Path join into a malloc'd string: tu_path("%s/%s", a, b). */
char *tu_path(const char *fmt, ...);
/* Runs a shell command, returns its exit status (or -1). */
int tu_system(const char *fmt, ...);

/* The engine fixture the engine-level tests share (cmocka setup/teardown): a scratch directory
 * and options for tests — small segments (64 KiB, batches up to 16 KiB, an index entry per
 * 512 bytes), two shards, the backend from RT_TEST_IO, no time retention and producers that never
 * expire (test batches carry 1970 timestamps). A test's own setup may adjust `o` before opening. */
struct tu_fixture {
    char *dir;
    rt_engine *e;
    struct rt_options o;
};
int tu_fixture_setup(void **state);
int tu_fixture_teardown(void **state);
/* Opens f->e with f->o; fails the test with rt_error_detail() when it cannot. */
void tu_fixture_open(struct tu_fixture *f);
/* Closes f->e (which must close cleanly) and clears it. */
void tu_fixture_close(struct tu_fixture *f);

/* True when path exists. */
bool fs_exists_for_test(const char *path);
/* Big-endian loads from raw bytes. */
uint64_t be64_of(const void *p);
uint32_t be32_of(const void *p);
/* The offset after the last batch of a fetch's bytes (Kafka batch headers: baseOffset at 0,
 * batchLength at 8, lastOffsetDelta at 23), markers and aborted batches included, so a reader
 * can go on from there; `from` when the fetch holds no whole batch header. */
int64_t tu_fetch_next_offset(const struct rt_fetch_view *v, int64_t from);

/* A record value that names its own offset: value_bytes (>= 28) bytes, "offset-<20 digits>|"
 * then one letter chosen by the offset, so a reader can tell a value served at the wrong offset
 * or a stale one. */
void tu_value_of(int64_t offset, char *buf, size_t value_bytes);
/* Appends one batch of `records` records to topic's partition 0 (rt_append): record i holds
 * tu_value_of(first + i) and timestamp 1000000 + first + i. Returns rt_append's result, so a
 * forked child can use it without cmocka. */
int tu_append_offset_batch(rt_engine *e, const char *topic, int64_t first, int records,
                           size_t value_bytes, int64_t *base_out);
/* Reads topic's partition 0 from its log start to its high watermark (read_uncommitted) and
 * fails the test unless the offsets are dense and each record's value is tu_value_of(its
 * offset), value_bytes long. Returns the high watermark; *start_out the log start. */
int64_t tu_read_back_offset_values(rt_engine *e, const char *topic, size_t value_bytes,
                                   int64_t *start_out);

#endif
