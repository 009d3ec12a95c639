/*
 * bench_check.h — the bench's self-check (issue 27 item 1): a row's ratio to its limit row
 * judged against 1.0 and the limit's own measured noise. See bench_check.c.
 */
#ifndef RT_BENCH_CHECK_H
#define RT_BENCH_CHECK_H

#include <stddef.h>

enum bench_check_verdict {
    BENCH_CHECK_NOT_MEASURED, /* no ratio (NAN): nothing to judge */
    BENCH_CHECK_OK,           /* ratio <= 1.0 */
    BENCH_CHECK_WITHIN_NOISE, /* 1.0 < ratio <= 1.0 + noise: reported, not a failure (BCK2) */
    BENCH_CHECK_FAILED,       /* ratio > 1.0 + noise: the limit is not a limit (BCK1) */
};

/* The verdict for `ratio` (a row's MB/s over its limit row's) given `noise`, the limit's
 * relative run-to-run spread measured in the same run (0 when it was not measured; NAN and
 * negative count as 0). */
enum bench_check_verdict bench_check_ratio(double ratio, double noise);

/* One line naming the row and the verdict, for stdout and stderr; returns snprintf's count.
 * row: "W2 ringtail p1"; way: the limit's winning way ("pwritev, pre-written"). */
int bench_check_line(char *buf, size_t n, enum bench_check_verdict v, const char *row, double ratio,
                     double noise, const char *way);

#endif /* RT_BENCH_CHECK_H */
