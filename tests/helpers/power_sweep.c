/*
 * power_sweep.c — a power-loss sweep over one kind of op (power_sweep.h). Test support only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "helpers/power_sweep.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/child.h"
#include "helpers/test_util.h"
#include "ringtail_test.h"

/* In the child: the n-th op of the sweep's kind after the open loses power. Reports {acked,
 * lost} on fd and _exits 0; 2, 3, 4 when the open, the rule or the report failed. */
static void power_child(const struct tu_power_sweep *s, const char *dir, unsigned n, int fd)
{
    struct io_fault_plan plan = {.track_unsynced = true, .track_dirs = true};
    rt_engine *e = NULL;
    if (rt_test_open(dir, s->options, &plan, &e) != 0)
        _exit(2);
    uint64_t seen = s->op == IO_OP_DIR_ENTRY   ? plan.dir_entries_seen
                    : s->op == IO_OP_DIR_FSYNC ? plan.dir_fsyncs_seen
                                               : plan.direct_fdatasyncs_seen;
    struct io_fault_rule rule = {.mode = IO_FAULT_POWER_LOSS, .op = s->op, .nth = seen + n};
    if (io_fault_rule_add(&plan, &rule) != 0)
        _exit(3);
    int rc = s->act(e, s->arg);
    uint8_t out[2] = {rc == 0, io_fault_power_is_lost(&plan)};
    if (write(fd, out, sizeof(out)) != (ssize_t)sizeof(out))
        _exit(4);
    _exit(0);
}

void tu_power_sweep(const struct tu_power_sweep *s)
{
    assert_true(s->op == IO_OP_DIR_ENTRY || s->op == IO_OP_DIR_FSYNC ||
                s->op == IO_OP_FDATASYNC_DIRECT);
    assert_non_null(s->act);
    assert_non_null(s->check);
    unsigned n = 1;
    for (; n <= s->runs_max; n++) {
        char *dir = tu_mkdtemp();
        if (s->prepare)
            s->prepare(dir, s->options, s->arg);
        int report_fd = -1;
        pid_t pid = tu_fork_piped(&report_fd);
        if (pid == 0)
            power_child(s, dir, n, report_fd);
        uint8_t got[2] = {0, 0};
        int status = 0;
        size_t r = tu_child_report(pid, report_fd, got, sizeof(got), &status);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || r != sizeof(got))
            fail_msg("power child failed (status %d)", status);
        bool acked = got[0], lost = got[1];
        char what[96];
        snprintf(what, sizeof(what), "power loss at op %d #%u %s", s->op, n, s->what);
        s->check(dir, s->options, acked, what, s->arg);
        tu_rmdir_free(dir);
        if (!lost)
            break;
    }
    print_message("power loss: %u ops of kind %d swept\n", n - 1, s->op);
    assert_true(n > 1 && n <= s->runs_max);
}
