/*
 * power_sweep.h — the power-loss sweep the topic tests share: for n = 1, 2, ... a forked child
 * opens the directory over the fault injector (io/io.h) with a power loss at the n-th op of one
 * kind counted from the operation's start, runs the operation and dies (_exit, no close); the
 * parent reopens what the power loss left and judges. The sweep ends at the first n the
 * operation runs past (no power loss happened). Test support only: it fails the test when the
 * child fails or the sweep ends outside 1..runs_max; what a run must leave is the test's check.
 * Include after cmocka.
 */
#ifndef RT_TEST_POWER_SWEEP_H
#define RT_TEST_POWER_SWEEP_H

#include <stdbool.h>

#include "io/io.h"
#include "ringtail.h"

struct tu_power_sweep {
    const struct rt_options *options; /* every open, the child's and the test's */
    enum io_op_type op;               /* the kind of op the power loss hits */
    unsigned runs_max;                /* the sweep must end by then */
    const char *what;                 /* the operation, for messages: "of a deletion" */
    /* In the parent, before the child: builds the directory (NULL: an empty one). */
    void (*prepare)(const char *dir, const struct rt_options *o, void *arg);
    /* In the child: the operation under power loss; returns its rc (0: acknowledged). */
    int (*act)(rt_engine *e, void *arg);
    /* In the parent, after the child died: judges dir. `acked` the operation answered 0; `what`
     * names the run ("power loss at op 3 #2 of a deletion"). */
    void (*check)(const char *dir, const struct rt_options *o, bool acked, const char *what,
                  void *arg);
    void *arg;
};

/* Runs the sweep: one fresh directory a run, removed after its check. */
void tu_power_sweep(const struct tu_power_sweep *s);

#endif
