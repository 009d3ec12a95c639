/*
 * cmd_bench.c — `ringtail bench`: runs the side-by-side benchmark, which is a separate program
 * (`ringtail-bench`, bench/) because it links RocksDB, LMDB and SQLite, which the CLI and the
 * library must not depend on. It is found next to this binary and exec'd with our arguments.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_bench(int argc, char **argv)
{
    (void)argc;
    static const char prog[] = "ringtail-bench";
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - sizeof(prog));
    char *slash = n > 0 ? memrchr(exe, '/', (size_t)n) : NULL;
    if (!slash)
        return cli_fail("bench", "/proc/self/exe: %s", n < 0 ? strerror(errno) : "no directory");
    memcpy(slash + 1, prog, sizeof(prog));
    char *args[256];
    int k = 0;
    args[k++] = exe;
    for (int i = 1; i < argc && k < 255; i++)
        args[k++] = argv[i];
    args[k] = NULL;
    execv(exe, args);
    return cli_fail("bench",
                    "cannot run %s: %s (it is built only when librocksdb-dev, liblmdb-dev and "
                    "libsqlite3-dev are installed; tools/setup.sh installs them)",
                    exe, strerror(errno));
}
