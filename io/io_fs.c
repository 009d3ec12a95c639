/*
 * io_fs.c — the filesystem calls the engine makes outside its rounds (io.h): io_fdatasync and
 * the directory calls io_file_create, io_rename, io_unlink, io_mkdir, io_rmdir, io_fsync_dir.
 *
 * It owns the production path of each: the argument checks and the plain syscall, its result as
 * 0 or -errno (io_file_create: the descriptor). It never decides a fault: with a fault plan
 * (tests only) each call goes to its wrapper in io_fault.c (io_fault_*, io_backend.h), which
 * counts it, consults the plan's rules and journals it around the same syscall. So production
 * pays one NULL check per call, and the injector stays a test seam.
 */
#include "io/io_backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int io_fdatasync(struct io_fault_plan *plan, int fd)
{
    if (fd < 0)
        return -EBADF;
    if (plan)
        return io_fault_fdatasync(plan, fd);
    return fdatasync(fd) == 0 ? 0 : -errno;
}

int io_file_create(struct io_fault_plan *plan, const char *path, int flags, mode_t mode)
{
    if (!path)
        return -EINVAL;
    flags |= O_CREAT | O_CLOEXEC;
    if (plan)
        return io_fault_file_create(plan, path, flags, mode);
    int fd = open(path, flags, mode);
    return fd >= 0 ? fd : -errno;
}

int io_mkdir(struct io_fault_plan *plan, const char *path, mode_t mode)
{
    if (!path)
        return -EINVAL;
    if (plan)
        return io_fault_mkdir(plan, path, mode);
    return mkdir(path, mode) == 0 ? 0 : -errno;
}

int io_rmdir(struct io_fault_plan *plan, const char *path)
{
    if (!path)
        return -EINVAL;
    if (plan)
        return io_fault_rmdir(plan, path);
    return rmdir(path) == 0 ? 0 : -errno;
}

int io_unlink(struct io_fault_plan *plan, const char *path)
{
    if (!path)
        return -EINVAL;
    if (plan)
        return io_fault_unlink(plan, path);
    return unlink(path) == 0 ? 0 : -errno;
}

int io_rename(struct io_fault_plan *plan, const char *from, const char *to)
{
    if (!from || !to)
        return -EINVAL;
    if (plan)
        return io_fault_rename(plan, from, to);
    return rename(from, to) == 0 ? 0 : -errno;
}

int io_fsync_dir_plain(const char *dir, struct stat *st)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) != 0 || fstat(fd, st) != 0 ? -errno : 0;
    close(fd);
    return rc;
}

int io_fsync_dir(struct io_fault_plan *plan, const char *dir)
{
    if (!dir)
        return -EINVAL;
    if (plan)
        return io_fault_fsync_dir(plan, dir);
    struct stat st;
    return io_fsync_dir_plain(dir, &st);
}
