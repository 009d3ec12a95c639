/*
 * proc_self.c — descriptor and mapping counts of the test's own process (proc_self.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "helpers/proc_self.h"

long tu_fds_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    long n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3; /* ".", ".." and the directory's own descriptor */
}

uint32_t tu_mappings_under(const char *path_part, uint32_t *indexes)
{
    FILE *in = fopen("/proc/self/maps", "r");
    assert_non_null(in);
    char line[8192];
    uint32_t n = 0, idx = 0;
    while (fgets(line, sizeof(line), in)) {
        if (!strstr(line, path_part))
            continue;
        n++;
        idx += strstr(line, ".index") != NULL || strstr(line, ".timeindex") != NULL;
    }
    fclose(in);
    if (indexes)
        *indexes = idx;
    return n;
}
