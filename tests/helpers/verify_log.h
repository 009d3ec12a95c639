/*
 * verify_log.h — what the tests collect from rt_verify's report callback: the problems (reports
 * not prefixed "warning: ") counted, the first kept, the list kept as far as it fits, warnings
 * counted apart (and listed only when a test asks, so a test looking for a file in the list is
 * not satisfied by a mere warning). Tests include this after cmocka's headers.
 */
#ifndef RT_TEST_VERIFY_LOG_H
#define RT_TEST_VERIFY_LOG_H

#include <stdbool.h>

struct tu_verify_log {
    unsigned problems;
    unsigned warnings;
    bool with_warnings; /* set by the test: warnings go into `all` too */
    unsigned print_max; /* set by the test: the first print_max problems also go to stderr */
    char first[1024];   /* the first problem */
    char all[16384];    /* the problems (and warnings if asked), one a line, as far as they fit */
};

/* rt_verify's callback; ctx is a struct tu_verify_log, zeroed but for the two settings. */
void tu_on_problem(void *ctx, const char *report);
/* rt_verify(dir) must answer 0 and report no problem (warnings allowed); fails the test with
 * the list otherwise, `when` saying which verify it was. */
void tu_expect_verify_clean(const char *dir, const char *when);
/* rt_verify(dir) must answer 0 and report neither a problem nor a warning (a leftover partition
 * directory is a warning, "unexpected entry in the data directory"); fails the test with `what`,
 * the counts and the reports otherwise. */
void tu_expect_verify_spotless(const char *dir, const char *what);

#endif
