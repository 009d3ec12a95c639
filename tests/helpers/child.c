/*
 * child.c — forked children that report through a pipe (child.h). Test support only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "helpers/child.h"

#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t tu_fork_piped(int *fd)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        *fd = fds[1];
        return 0;
    }
    close(fds[1]);
    *fd = fds[0];
    return pid;
}

size_t tu_child_report(pid_t pid, int fd, void *rep, size_t rep_bytes, int *status)
{
    memset(rep, 0, rep_bytes);
    size_t got = 0;
    while (got < rep_bytes) {
        ssize_t n = read(fd, (char *)rep + got, rep_bytes - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    *status = 0;
    assert_int_equal(waitpid(pid, status, 0), pid);
    return got;
}
