/*
 * test_verify_progress.c — rt_verify draws a progress bar on stderr when stderr is a terminal
 * (issue 21 item 6): run in a child on a pseudo-terminal (forkpty), it shows "verify: [", reaches
 * 100% and clears its line; with stderr a pipe (every other test, and scripts), or with
 * RINGTAIL_NO_PROGRESS set, it writes nothing there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "ringtail.h"

static void build(struct tu_fixture *f)
{
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "v", 2), 0);
    int64_t next = 0;
    for (int i = 0; i < 60; i++) {
        int64_t base = -1;
        assert_int_equal(tu_append_offset_batch(f->e, "v", next, 10, 200, &base), 0);
        next += 10;
    }
    tu_fixture_close(f);
}

/* Runs rt_verify on dir in a child whose stderr is a pseudo-terminal (or a pipe) and returns
 * what it wrote there (malloc'd). */
static char *stderr_of_verify(const char *dir, bool terminal, bool quiet_env)
{
    int fd = -1;
    pid_t pid;
    int pipefd[2] = {-1, -1};
    if (terminal) {
        pid = forkpty(&fd, NULL, NULL, NULL);
    } else {
        assert_int_equal(pipe(pipefd), 0);
        pid = fork();
        fd = pipefd[0];
    }
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!terminal) {
            dup2(pipefd[1], STDERR_FILENO);
            close(pipefd[0]);
        }
        if (quiet_env)
            setenv("RINGTAIL_NO_PROGRESS", "1", 1);
        else
            unsetenv("RINGTAIL_NO_PROGRESS");
        int rc = rt_verify(dir, NULL, NULL);
        _exit(rc == 0 ? 0 : 1);
    }
    if (!terminal)
        close(pipefd[1]);
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(1, cap);
    assert_non_null(out);
    for (;;) {
        ssize_t n = read(fd, out + len, cap - 1 - len);
        if (n > 0) {
            len += (size_t)n;
            if (len + 1 >= cap)
                break;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        break; /* EOF, or EIO once the child closed the terminal */
    }
    close(fd);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    out[len] = 0;
    return out;
}

static void test_progress_on_a_terminal(void **state)
{
    struct tu_fixture *f = *state;
    build(f);
    char *out = stderr_of_verify(f->dir, true, false);
    assert_non_null(strstr(out, "verify: ["));
    assert_non_null(strstr(out, "100%"));
    assert_non_null(strstr(out, "\033[K")); /* the line is cleared for what follows */
    free(out);
}

static void test_no_progress_elsewhere(void **state)
{
    struct tu_fixture *f = *state;
    build(f);
    char *out = stderr_of_verify(f->dir, false, false);
    assert_string_equal(out, "");
    free(out);
    out = stderr_of_verify(f->dir, true, true);
    assert_null(strstr(out, "verify: ["));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_progress_on_a_terminal, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_no_progress_elsewhere, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
