/*
 * seeded.h — what the seeded randomized tests (test_model, test_torture) share: a splitmix64
 * stream reproducible from its seed, integer knobs read from the environment (RT_MODEL_*,
 * RT_TORTURE_*), a monotonic clock in milliseconds and the read of a forked child's reports.
 * A failing run is replayed by its seed.
 */
#ifndef RT_TEST_SEEDED_H
#define RT_TEST_SEEDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* splitmix64's finalizer: a well-mixed 64-bit hash of z. */
static inline uint64_t tu_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The next value of the splitmix64 stream whose state is *s. */
static inline uint64_t tu_rng_next(uint64_t *s)
{
    return tu_mix64(*s += 0x9e3779b97f4a7c15ull);
}

/* A value in [0, n) from the stream (0 when n is 0). */
static inline uint64_t tu_rng_below(uint64_t *s, uint64_t n)
{
    return n ? tu_rng_next(s) % n : 0;
}

/* The environment variable `name` as a decimal integer; dflt when it is unset, empty or not a
 * whole number. */
int64_t tu_env_int(const char *name, int64_t dflt);
/* CLOCK_MONOTONIC in milliseconds. */
int64_t tu_now_ms(void);
/* Sleeps ms milliseconds (an interrupted sleep returns early). */
void tu_sleep_ms(int64_t ms);
/* Reads exactly len bytes from fd (a forked child's report pipe), retrying EINTR (a child's
 * SIGCHLD); false at end of file or on an error first. */
bool tu_read_full(int fd, void *buf, size_t len);

#endif
