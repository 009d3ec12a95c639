/*
 * verify_log.c — the tests' collector of rt_verify's reports (verify_log.h). Test support only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "helpers/verify_log.h"

#include <stdio.h>
#include <string.h>

#include "ringtail.h"

void tu_on_problem(void *ctx, const char *report)
{
    struct tu_verify_log *l = ctx;
    bool warning = strncmp(report, "warning: ", 9) == 0;
    if (warning) {
        l->warnings++;
        if (!l->with_warnings)
            return;
    } else {
        if (l->problems == 0)
            snprintf(l->first, sizeof(l->first), "%s", report);
        if (l->problems < l->print_max)
            fprintf(stderr, "  verify: %s\n", report);
        l->problems++;
    }
    size_t n = strlen(l->all);
    snprintf(l->all + n, sizeof(l->all) - n, "%s\n", report);
}

void tu_expect_verify_clean(const char *dir, const char *when)
{
    struct tu_verify_log l = {0};
    int rc = rt_verify(dir, tu_on_problem, &l);
    if (rc != 0 || l.problems != 0)
        fail_msg("verify %s (%s): %s, %u problems\n%s", when, dir, rt_strerror(rc), l.problems,
                 l.all);
}

void tu_expect_verify_spotless(const char *dir, const char *what)
{
    struct tu_verify_log l = {.with_warnings = true};
    int rc = rt_verify(dir, tu_on_problem, &l);
    if (rc != 0 || l.problems != 0 || l.warnings != 0)
        fail_msg("%s: verify: %s, %u problems, %u warnings\n%s", what, rt_strerror(rc), l.problems,
                 l.warnings, l.all);
}
