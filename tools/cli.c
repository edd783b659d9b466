/* cli.c: the printing side of the mount contract's "Command" section, shared by tiledbfs-cat, tiledbfs-create and tiledbfs-copy. */
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

const char *const tdbcli_s3_options[] = {
    "endpoint", "account", "region", "profile", "credentials_file", "config_file",
    "s3_requests", "s3_timeout", "s3_retries", "s3_part_size", NULL};

/* Whether the name of option `opt` ("name[=value]", n bytes) is in v. */
static bool tdbcli_in(const char *opt, size_t n, const char *const *v)
{
    size_t len = strcspn(opt, "=");

    if (len > n)
        len = n;
    for (; v && *v; v++)
        if (strlen(*v) == len && !strncmp(opt, *v, len))
            return true;
    return false;
}

/* "a=, b=, ..." of the names of v and w into out[cap]. */
static void tdbcli_names(const char *const *v, const char *const *w,
                         char *out, size_t cap)
{
    size_t k = 0;

    out[0] = '\0';
    for (int pass = 0; pass < 2; pass++)
        for (const char *const *p = pass ? w : v; p && *p && k < cap; p++)
            k += (size_t)snprintf(out + k, cap - k, "%s%s=", k ? ", " : "",
                                  *p);
}

int tdbcli_option_list_only(struct tdbm_options *o, const char *list,
                            const char *const *allowed,
                            const char *const *more, const char *what)
{
    const char *p = list;

    while (*p) {
        size_t n = strcspn(p, ",");
        if (!tdbcli_in(p, n, allowed) && !tdbcli_in(p, n, more)) {
            char names[512];
            tdbcli_names(allowed, more, names, sizeof names);
            tdbcli_say(NULL, "unknown option %.*s (%s takes %s)",
                       (int)(n > 60 ? 60 : n), p, what, names);
            return -1;
        }
        p += n + (p[n] == ',');
    }
    return tdbcli_option_list(o, list);
}

int tdbcli_open_url(struct tdb_io *io, const char *url,
                    const struct tdbm_options *o, bool create)
{
    struct tdb_store_options s3;
    struct tdb_error err;
    int rc;

    if (tdb_s3_global_init() != 0) {
        tdbcli_say(url, "cannot set up libcurl");
        return -1;
    }
    tdbm_s3_options(o, &s3);
    tdb_error_clear(&err);
    rc = tdb_io_open_url_with(io, url, &s3, create, &err);
    if (rc < 0) {
        tdbcli_report(NULL, rc, &err);
        return -1;
    }
    return 0;
}

int tdbcli_open(struct tdbm_source *s, const char *source,
                const struct tdbm_options *o)
{
    char why[TDB_ERROR_MSG_MAX + 256];

    if (tdbm_source_open(s, source, o, why, sizeof why) == 0) {
        if (s->warning[0])
            tdbcli_say(NULL, "%s", s->warning);
        return 0;
    }
    tdbcli_say(NULL, "%s", why);
    return -1;
}
