/*
 * fsutil.c — see fsutil.h. Every step here is one the crash-consistency of the data directory
 * depends on: the order is write, fdatasync, rename, fsync(directory).
 */
#include "fsutil.h"

#include "io/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int fs_read_file(const char *path, uint8_t **buf_out, size_t *len_out, size_t max_bytes)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    if ((uint64_t)st.st_size > max_bytes) {
        close(fd);
        return -EFBIG;
    }
    size_t len = (size_t)st.st_size;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, buf + got, len - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int rc = n < 0 ? -errno : -EIO;
            free(buf);
            close(fd);
            return rc;
        }
        got += (size_t)n;
    }
    close(fd);
    *buf_out = buf;
    *len_out = len;
    return 0;
}

int fs_pwrite_all(int fd, const void *buf, size_t len, uint64_t offset)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return 0;
}

int fs_fsync_dir(struct io_fault_plan *faults, const char *dir)
{
    return io_fsync_dir(faults, dir);
}

int fs_replace_file(struct io_fault_plan *faults, const char *dir, const char *tmp_name,
                    const char *final_name, const void *buf, size_t len)
{
    bool renamed = false;
    return fs_replace_file_renamed(faults, dir, tmp_name, final_name, buf, len, &renamed);
}

int fs_replace_file_renamed(struct io_fault_plan *faults, const char *dir, const char *tmp_name,
                            const char *final_name, const void *buf, size_t len, bool *renamed)
{
    *renamed = false;
    char tmp[4096], fin[4096];
    if (snprintf(tmp, sizeof(tmp), "%s/%s", dir, tmp_name) >= (int)sizeof(tmp) ||
        snprintf(fin, sizeof(fin), "%s/%s", dir, final_name) >= (int)sizeof(fin))
        return -ENAMETOOLONG;
    int fd = io_file_create(faults, tmp, O_WRONLY | O_TRUNC, 0644);
    if (fd < 0)
        return fd;
    int rc = fs_pwrite_all(fd, buf, len, 0);
    if (rc == 0)
        rc = io_fdatasync(faults, fd);
    close(fd);
    if (rc == 0)
        rc = io_rename(faults, tmp, fin);
    if (rc) {
        (void)io_unlink(faults, tmp);
        return rc;
    }
    *renamed = true;
    return io_fsync_dir(faults, dir);
}

bool fs_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int64_t fs_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t fs_monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
