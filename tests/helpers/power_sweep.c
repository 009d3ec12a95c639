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

/* In the child: the n-th op of kind op after the open loses power. Reports {acked, lost} on fd
 * and _exits 0; 2, 3, 4 when the open, the rule or the report failed. */
static void power_child(const struct tu_power_sweep *s, enum io_op_type op, const char *dir,
                        unsigned n, int fd)
{
    struct rt_options o;
    s->options(&o);
    struct io_fault_plan plan = {.track_unsynced = true, .track_dirs = true};
    rt_engine *e = NULL;
    if (rt_test_open(dir, &o, &plan, &e) != 0)
        _exit(2);
    uint64_t seen = op == IO_OP_DIR_ENTRY   ? plan.dir_entries_seen
                    : op == IO_OP_DIR_FSYNC ? plan.dir_fsyncs_seen
                                            : plan.direct_fdatasyncs_seen;
    struct io_fault_rule rule = {.mode = IO_FAULT_POWER_LOSS, .op = op, .nth = seen + n};
    if (io_fault_rule_add(&plan, &rule) != 0)
        _exit(3);
    int rc = s->act(e);
    uint8_t out[2] = {rc == 0, io_fault_power_is_lost(&plan)};
    if (write(fd, out, sizeof(out)) != (ssize_t)sizeof(out))
        _exit(4);
    _exit(0);
}

static void open_or_fail(const char *dir, const struct rt_options *o, rt_engine **e,
                         const char *what)
{
    int rc = rt_open(dir, o, e);
    if (rc)
        fail_msg("%s: open: %s (%s)", what, rt_strerror(rc), rt_error_detail());
}

void tu_power_sweep(const struct tu_power_sweep *s, enum io_op_type op)
{
    assert_true(op == IO_OP_DIR_ENTRY || op == IO_OP_DIR_FSYNC || op == IO_OP_FDATASYNC_DIRECT);
    assert_non_null(s->options);
    assert_non_null(s->act);
    assert_non_null(s->check);
    struct rt_options o;
    s->options(&o);
    unsigned n = 1;
    for (; n <= s->runs_max; n += tu_sweep_stride()) {
        char *dir = tu_mkdtemp();
        rt_engine *e = NULL;
        if (s->prepare) {
            open_or_fail(dir, &o, &e, "prepare");
            s->prepare(e);
            assert_int_equal(rt_close(e), 0);
        }
        int report_fd = -1;
        pid_t pid = tu_fork_piped(&report_fd);
        if (pid == 0)
            power_child(s, op, dir, n, report_fd);
        uint8_t got[2] = {0, 0};
        int status = 0;
        size_t r = tu_child_report(pid, report_fd, got, sizeof(got), &status);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || r != sizeof(got))
            fail_msg("power child failed (status %d)", status);
        bool acked = got[0], lost = got[1];
        char what[96];
        snprintf(what, sizeof(what), "power loss at op %d #%u %s", op, n, s->what);
        open_or_fail(dir, &o, &e, what);
        s->check(e, dir, acked, what);
        assert_int_equal(rt_close(e), 0);
        if (s->after)
            s->after(dir, what);
        tu_rmdir_free(dir);
        if (!lost)
            break;
    }
    print_message("power loss: ops of kind %d swept to #%u, every %u\n", op, n, tu_sweep_stride());
    assert_true(n > 1 && n <= s->runs_max);
}
