/*
 * proc_self.h — what the tests count of their own process through /proc/self: open file
 * descriptors and the memory mappings of files under a directory. Shared by the tests that bound
 * descriptors and mappings (test_open_segments, test_recovery_point, test_mapped_segments), so
 * each counts the same way. Never changes anything; fails the test (cmocka) when /proc cannot
 * be read. Tests include this after cmocka's headers.
 */
#ifndef RT_TEST_PROC_SELF_H
#define RT_TEST_PROC_SELF_H

#include <stdint.h>

/* Descriptors the process holds now (the counting's own excluded). */
long tu_fds_open(void);

/* Lines of /proc/self/maps naming a file whose path contains `path_part` (a directory, or a
 * partition's "/<topic>-<n>/"); *indexes (may be NULL): how many of them are .index or
 * .timeindex files. */
uint32_t tu_mappings_under(const char *path_part, uint32_t *indexes);

#endif
