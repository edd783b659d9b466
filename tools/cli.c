/* cli.c: the printing side of the mount contract's "Command" section, shared by tiledbfs-cat and tiledbfs-create. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints "PROG: WHAT: message" as one line: control characters in either
 * part (a newline in an engine message, a path) become '?'. */
static void tdbcli_say(const char *what, const char *fmt, ...)
{
    char msg[TDB_ERROR_MSG_MAX + 256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    fprintf(stderr, "%s: ", program_invocation_short_name);
    if (what) {
        for (const char *p = what; *p; p++)
            fputc((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p, stderr);
        fputs(": ", stderr);
    }
    fprintf(stderr, "%s\n", msg);
}

void tdbcli_report(const char *what, int code, const struct tdb_error *err)
{
    tdbcli_say(what, "%s", tdb_error_text(code, err));
}

void tdbcli_report_text(const char *what, const char *msg)
{
    tdbcli_say(what, "%s", msg);
}

void tdbcli_report_errno(const char *what, int neg_errno)
{
    tdbcli_say(what, "%s", strerror(-neg_errno));
}

int tdbcli_option_list(struct tdbm_options *o, const char *list)
{
    char why[TDB_ERROR_MSG_MAX + 256];

    if (tdbm_option_list(o, list, why, sizeof why) == 0)
        return 0;
    tdbcli_say(NULL, "%s", why);
    return -1;
}

int tdbcli_open(struct tdbm_source *s, const char *source,
                const struct tdbm_options *o)
{
    char why[TDB_ERROR_MSG_MAX + 256];

    if (tdbm_source_open(s, source, o, why, sizeof why) == 0)
        return 0;
    tdbcli_say(NULL, "%s", why);
    return -1;
}
