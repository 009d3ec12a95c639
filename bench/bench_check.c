/*
 * bench_check.c — the bench's self-check (issue 27 item 1): a ratio to a limit above 1.0 does
 * not mean ringtail beat the machine; it means the limit row is not a limit (a way of doing
 * the same work that the bench did not try, or a yardstick measured under other conditions),
 * so every ratio printed beside it is wrong. bench_main.c judges every row that has a ratio to
 * a write limit (W1, W2) with bench_check_ratio after the ratios are computed, prints
 * bench_check_line for each row that is not OK, and counts a failure (non-zero exit) for
 * BENCH_CHECK_FAILED.
 *
 * It owns the verdict and its wording only: it never measures, never reads rows, never exits.
 *
 * BCK1. A ratio above 1.0 + noise is a failure, where noise is the limit's own relative
 *      run-to-run spread measured in the same run (bench_main.c's limit_group runs the winning
 *      way twice: |a - b| / max(a, b)). Without a measured noise the tolerance is 0: any ratio
 *      above 1.0 fails.
 * BCK2. A ratio in (1.0, 1.0 + noise] is within what the limit itself varied by in this run: it
 *      is printed as a warning with both figures, not counted as a failure, because the same
 *      way of writing differed by that much between two runs minutes apart.
 */
#include "bench_check.h"

#include <math.h>
#include <stdio.h>

enum bench_check_verdict bench_check_ratio(double ratio, double noise)
{
    if (isnan(ratio))
        return BENCH_CHECK_NOT_MEASURED;
    if (isnan(noise) || noise < 0)
        noise = 0;
    if (ratio <= 1.0)
        return BENCH_CHECK_OK;
    return ratio <= 1.0 + noise ? BENCH_CHECK_WITHIN_NOISE /* BCK2 */
                                : BENCH_CHECK_FAILED;      /* BCK1 */
}

int bench_check_line(char *buf, size_t n, enum bench_check_verdict v, const char *row, double ratio,
                     double noise, const char *way)
{
    double tol = isnan(noise) || noise < 0 ? 0 : noise;
    switch (v) {
    case BENCH_CHECK_FAILED:
        return snprintf(buf, n,
                        "SELF-CHECK FAILED: %s runs at %.3fx its limit (limit: %s; its measured "
                        "noise %.1f%%): the limit is not a limit",
                        row, ratio, way, 100.0 * tol);
    case BENCH_CHECK_WITHIN_NOISE:
        return snprintf(buf, n,
                        "self-check warning: %s runs at %.3fx its limit (limit: %s), within the "
                        "limit's measured noise of %.1f%%",
                        row, ratio, way, 100.0 * tol);
    case BENCH_CHECK_OK:
        return snprintf(buf, n, "self-check ok: %s at %.3fx its limit (%s)", row, ratio, way);
    default:
        return snprintf(buf, n, "self-check: %s has no ratio to a limit", row);
    }
}
