/*
 * small_file.c — reading and durably replacing the broker's small files (small_file.h: SF1,
 * SF2). Costs: a read is one open, fstat and read of the whole file; a replace two fsyncs (the
 * file, its directory) and a rename.
 */
#include "tools/kafka/store/small_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

int small_file_read(const char *dir, const char *name, size_t max_bytes, uint8_t **buf, size_t *len,
                    char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e != ENOENT)
            snprintf(err, errlen, "%s: cannot open: %s", path, strerror(e));
        return -e;
    }
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : (uint64_t)st.st_size > max_bytes ? EFBIG : 0; /* SF2 */
    size_t size = e ? 0 : (size_t)st.st_size;
    uint8_t *b = e ? NULL : malloc(size ? size : 1);
    if (e == 0 && !b)
        e = ENOMEM;
    if (e) {
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        close(fd);
        return -e;
    }
    for (size_t got = 0; got < size;) {
        ssize_t n = read(fd, b + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            e = n < 0 ? errno : EIO; /* EIO: the file shrank while read */
            snprintf(err, errlen, "%s: read: %s", path, strerror(e));
            free(b);
            close(fd);
            return -e;
        }
        got += (size_t)n;
    }
    close(fd);
    *buf = b;
    *len = size;
    return 0;
}

int small_file_replace(const char *dir, const char *name, const uint8_t *buf, size_t len, char *err,
                       size_t errlen)
{
    char path[4096], tmp[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name);
    const char *step = "open", *file = tmp;
    int e = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        e = errno;
        goto fail;
    }
    step = "write";
    for (size_t put = 0; put < len;) {
        ssize_t n = write(fd, buf + put, len - put);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            e = errno;
            close(fd);
            goto fail;
        }
        put += (size_t)n;
    }
    step = "fsync";
    if (fsync(fd) != 0) {
        e = errno;
        close(fd);
        goto fail;
    }
    close(fd);
    step = "rename";
    file = path;
    if (rename(tmp, path) != 0) {
        e = errno;
        goto fail;
    }
    step = "fsync of the directory";
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0) {
        e = errno;
        if (dfd >= 0)
            close(dfd);
        goto fail;
    }
    close(dfd);
    return 0;
fail:
    snprintf(err, errlen, "%s: %s: %s", file, step, strerror(e));
    return -e;
}

uint32_t small_file_crc(const uint8_t *p, size_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    while (n > 0) { /* zlib takes uInt lengths */
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)c;
}
