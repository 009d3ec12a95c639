/*
 * power_sweep.h — the power-loss sweep the topic tests share: for n = 1, 2, ... a forked child
 * opens the directory over the fault injector (io/io.h) with a power loss at the n-th op of one
 * kind counted from the operation's start, runs the operation and dies (_exit, no close); the
 * parent reopens what the power loss left and judges. The sweep ends at the first n the
 * operation runs past (no power loss happened). Test support only: it fails the test when the
 * child fails, an open or close in the parent fails, or the sweep ends outside 1..runs_max;
 * what a run must leave is the test's check. Include after cmocka.
 */
#ifndef RT_TEST_POWER_SWEEP_H
#define RT_TEST_POWER_SWEEP_H

#include <stdbool.h>

#include "io/io.h"
#include "ringtail.h"

struct tu_power_sweep {
    void (*options)(struct rt_options *o); /* every open's, the child's and the parent's */
    unsigned runs_max;                     /* the sweep must end by then */
    const char *what;                      /* the operation, for messages: "of a deletion" */
    /* In the parent, on the fresh directory opened, before the child (NULL: left empty). */
    void (*prepare)(rt_engine *e);
    /* In the child: the operation under power loss; returns its rc (0: acknowledged). */
    int (*act)(rt_engine *e);
    /* In the parent, on what the power loss left, reopened (closed after it): `acked` the
     * operation answered 0; `what` names the run ("power loss at op 3 #2 of a deletion"). */
    void (*check)(rt_engine *e, const char *dir, bool acked, const char *what);
    /* After that close (NULL: nothing), e.g. tu_expect_verify_spotless. */
    void (*after)(const char *dir, const char *what);
};

/* Runs the sweep over ops of kind op (IO_OP_DIR_ENTRY, IO_OP_DIR_FSYNC or
 * IO_OP_FDATASYNC_DIRECT): one fresh directory a run, removed after its check. */
void tu_power_sweep(const struct tu_power_sweep *s, enum io_op_type op);

#endif
