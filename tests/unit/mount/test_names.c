/* test_names.c: the names of metadata keys as file names (mount/names.c):
 * encoded and decoded back, and the names a folder cannot hold. */
#include "fixture.h"
#include "core/core.h"
#include "core/io_local.h"
#include "../support.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_names(void)
{
    const char *keys[] = {"plain", "a/b", "100%", "%2F/%25", "x%y/z", ".",
                          "..", "", "__attr", "...", "./", NULL};
    for (int i = 0; keys[i]; i++) {
        char *enc = tdbm_name_encode(keys[i]);
        char *dec = enc ? tdbm_name_decode(enc) : NULL;
        CHECK(enc && !strchr(enc, '/'));
        CHECK(dec && strcmp(dec, keys[i]) == 0);
        free(enc);
        free(dec);
    }
    char *e = tdbm_name_encode("a/b%c");
    CHECK(e && strcmp(e, "a%2Fb%25c") == 0);
    free(e);
    /* names a folder cannot hold, and the name "" is shown under */
    static const char *const shown[][2] = {
        {".", "%2E"}, {"..", "%2E."}, {"", "__attr"}, {"__attr", "%5F_attr"}};
    for (size_t i = 0; i < sizeof shown / sizeof *shown; i++) {
        e = tdbm_name_encode(shown[i][0]);
        CHECK(e && strcmp(e, shown[i][1]) == 0);
        free(e);
        e = tdbm_name_decode(shown[i][1]);
        CHECK(e && strcmp(e, shown[i][0]) == 0);
        free(e);
    }
    /* a name no key is shown under (each key has one: hex digits in
     * capitals, as listed) */
    static const char *const bad[] = {"%41", "end%", "%2", "%zz", "%00",
                                      "%2E%2E", ".", "..", "%5F_meta",
                                      "%5F_attr2", "%2f", "%2e", "%2e.",
                                      "%5f_attr", "a%2fb", "100%25%2f"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        errno = 0;
        e = tdbm_name_decode(bad[i]);
        CHECK(e == NULL && errno == EINVAL);
        free(e);
    }
}

int main(void)
{
    RUN(test_names);
    return unit_done();
}
