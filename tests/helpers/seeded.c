/*
 * seeded.c — the environment knobs and the clock of the seeded randomized tests (seeded.h).
 */
#include "helpers/seeded.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int64_t tu_env_int(const char *name, int64_t dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    return end && *end == '\0' ? (int64_t)x : dflt;
}

int64_t tu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tu_sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

bool tu_read_full(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        got += (size_t)n;
    }
    return true;
}
