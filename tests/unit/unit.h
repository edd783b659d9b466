/* unit.h: the tiny harness of the C unit tests.  Each test binary defines
 * test functions, lists them with RUN() (or RUN_CORPUS() of support.h),
 * and ends with unit_done(), which prints "N passed, N failed" (and "N
 * skipped") and returns the exit status: 1 on a failure, 77 (automake's
 * SKIP) when a test was skipped, else 0: a binary that could not run all
 * its tests does not count as passed.  The counts live in unit.c, in the
 * tests' library (tests/unit/libunit.a), so that the fixtures there can
 * fail the running test with CHECK as the test's own code does. */
#ifndef TDB_UNIT_H
#define TDB_UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tests of this binary that passed, failed, were skipped; whether the
 * running test failed (CHECK sets it), and its name. */
extern int unit_passed, unit_failed, unit_skipped, unit_cur_failed;
extern const char *unit_cur;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "FAIL %s: %s:%d: %s\n", unit_cur, __FILE__,    \
                    __LINE__, #cond);                                      \
            unit_cur_failed = 1;                                           \
        }                                                                  \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                 \
    do {                                                                   \
        long long unit_a = (long long)(a), unit_b = (long long)(b);        \
        if (unit_a != unit_b) {                                            \
            fprintf(stderr, "FAIL %s: %s:%d: %s == %lld, expected %lld\n", \
                    unit_cur, __FILE__, __LINE__, #a, unit_a, unit_b);     \
            unit_cur_failed = 1;                                           \
        }                                                                  \
    } while (0)

#define CHECK_MEM(a, b, n) CHECK(memcmp((a), (b), (n)) == 0)

#define RUN(fn)                                                            \
    do {                                                                   \
        unit_cur = #fn;                                                    \
        unit_cur_failed = 0;                                               \
        fn();                                                              \
        if (unit_cur_failed) {                                             \
            unit_failed++;                                                 \
        } else {                                                           \
            unit_passed++;                                                 \
            printf("ok %s\n", #fn);                                        \
        }                                                                  \
    } while (0)

/* Counts test fn as skipped, without running it, and says why. */
#define UNIT_SKIP(fn, why)                                                 \
    do {                                                                   \
        unit_skipped++;                                                    \
        printf("SKIP %s: %s\n", #fn, why);                                 \
    } while (0)

/* Prints the counts ("N passed, N failed", and ", N skipped" when a test
 * was) and returns the binary's exit status: 1 when a test failed, else
 * 77 when one was skipped, else 0. */
int unit_done(void);

#endif
