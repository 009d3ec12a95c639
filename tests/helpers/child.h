/*
 * child.h — a forked child that reports to the test through a pipe, as the power-loss and crash
 * tests run them: the child does the damage (and _exits), the parent reads its report, reaps it
 * and judges. Test support only: fails the test when pipe or fork fails. Include after cmocka.
 */
#ifndef RT_TEST_CHILD_H
#define RT_TEST_CHILD_H

#include <stddef.h>
#include <sys/types.h>

/* Forks with a pipe from child to parent. Returns the child's pid in the parent (*fd the read
 * end) and 0 in the child (*fd the write end; the child must _exit, never return). */
pid_t tu_fork_piped(int *fd);
/* In the parent: reads the child's report into rep until rep_bytes arrived or the child closed
 * its end, closes fd, reaps the child (its wait status in *status) and returns the bytes read.
 * The part of rep not written by the child is zeroed. */
size_t tu_child_report(pid_t pid, int fd, void *rep, size_t rep_bytes, int *status);

#endif
