/*
 * fsutil.h — small, careful file-system steps the engine repeats: read a whole (bounded) file,
 * replace a file atomically (tmp + fdatasync + rename + directory fsync), fsync a directory,
 * create a marker file durably. All return 0 or -errno; none allocates except fs_read_file's
 * output buffer. Never touches engine state.
 *
 * The steps that change or sync directory entries take the engine's fault plan (tests; NULL
 * otherwise) and go through io/'s directory calls (io.h: io_file_create, io_rename, io_unlink,
 * io_fsync_dir), so the fault injector's directory-entry model sees them: a rename not yet
 * covered by its directory's fsync is undone at a simulated power loss, as a real crash may.
 */
#ifndef RT_FSUTIL_H
#define RT_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct io_fault_plan;

/* Reads all of `path` (at most max_bytes, else -EFBIG) into a malloc'd buffer. */
int fs_read_file(const char *path, uint8_t **buf_out, size_t *len_out, size_t max_bytes);

/* Writes dir/tmp_name, fdatasyncs it, renames it over dir/final_name and fsyncs dir. `faults`:
 * the engine's fault plan or NULL (above). */
int fs_replace_file(struct io_fault_plan *faults, const char *dir, const char *tmp_name,
                    const char *final_name, const void *buf, size_t len);

/* fs_replace_file, telling in *renamed whether the rename was made (a failure with *renamed
 * false left dir/final_name as it was: a caller may undo what it made for the new file). */
int fs_replace_file_renamed(struct io_fault_plan *faults, const char *dir, const char *tmp_name,
                            const char *final_name, const void *buf, size_t len, bool *renamed);

/* fsync(2) of a directory, so entries created, renamed or removed in it survive a crash
 * (io_fsync_dir with the engine's fault plan or NULL). */
int fs_fsync_dir(struct io_fault_plan *faults, const char *dir);

/* Writes all of buf at offset (loops over short writes and EINTR). */
int fs_pwrite_all(int fd, const void *buf, size_t len, uint64_t offset);

bool fs_exists(const char *path);

/* Current time in ms (CLOCK_REALTIME) and a monotonic clock in ms. */
int64_t fs_now_ms(void);
int64_t fs_monotonic_ms(void);

#endif /* RT_FSUTIL_H */
