/* unit.c: the counts of the harness (unit.h), one set per test binary. */
#include "unit.h"

int unit_passed, unit_failed, unit_skipped, unit_cur_failed;
const char *unit_cur;

int unit_done(void)
{
    if (unit_skipped)
        printf("%d passed, %d failed, %d skipped\n", unit_passed,
               unit_failed, unit_skipped);
    else
        printf("%d passed, %d failed\n", unit_passed, unit_failed);
    if (unit_failed)
        return 1;
    return unit_skipped > 0 ? 77 : 0;
}
