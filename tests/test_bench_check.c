/*
 * test_bench_check.c — the bench's self-check (bench/bench_check.c, issue 27 item 1): a ratio
 * to a limit above 1.0 fails (BCK1) unless it is within the limit's own measured noise (BCK2),
 * and the failure line names the row, the ratio and the limit's way. Pure functions: no
 * engine, no disk.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "bench_check.h"

/* BCK1: above 1.0 with no measured noise fails; so does anything above 1.0 + noise. */
static void test_ratio_above_one_fails(void **state)
{
    (void)state;
    assert_int_equal(bench_check_ratio(1.07, 0), BENCH_CHECK_FAILED);
    assert_int_equal(bench_check_ratio(1.0001, 0), BENCH_CHECK_FAILED);
    assert_int_equal(bench_check_ratio(2.1, NAN), BENCH_CHECK_FAILED);
    assert_int_equal(bench_check_ratio(1.07, -0.5), BENCH_CHECK_FAILED); /* no negative slack */
    assert_int_equal(bench_check_ratio(1.07, 0.05), BENCH_CHECK_FAILED);
}

/* BCK2: within the limit's measured noise is a warning, at or below 1.0 is fine. */
static void test_within_noise_and_ok(void **state)
{
    (void)state;
    assert_int_equal(bench_check_ratio(1.04, 0.05), BENCH_CHECK_WITHIN_NOISE);
    assert_int_equal(bench_check_ratio(1.05, 0.05), BENCH_CHECK_WITHIN_NOISE);
    assert_int_equal(bench_check_ratio(1.0, 0), BENCH_CHECK_OK);
    assert_int_equal(bench_check_ratio(0.58, 0.3), BENCH_CHECK_OK);
    assert_int_equal(bench_check_ratio(NAN, 0), BENCH_CHECK_NOT_MEASURED);
}

/* The failure line is loud and names the row, its ratio and the limit's way. */
static void test_failure_line_names_the_row(void **state)
{
    (void)state;
    char line[256];
    enum bench_check_verdict v = bench_check_ratio(2.1, 0.01);
    int n = bench_check_line(line, sizeof(line), v, "W2 ringtail p1", 2.1, 0.01,
                             "io_uring linked, pre-written");
    assert_true(n > 0);
    assert_non_null(strstr(line, "SELF-CHECK FAILED"));
    assert_non_null(strstr(line, "W2 ringtail p1"));
    assert_non_null(strstr(line, "2.100x"));
    assert_non_null(strstr(line, "io_uring linked, pre-written"));
    v = bench_check_ratio(1.02, 0.03);
    bench_check_line(line, sizeof(line), v, "W1 ringtail", 1.02, 0.03, "pwritev");
    assert_null(strstr(line, "FAILED"));
    assert_non_null(strstr(line, "within the limit's measured noise of 3.0%"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ratio_above_one_fails),
        cmocka_unit_test(test_within_noise_and_ok),
        cmocka_unit_test(test_failure_line_names_the_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
