/* log.c: what the mount tells the front end: log lines, each thread's last engine error, and invalidations. */
#include "priv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* One log line through the front end; the engine's messages name file,
 * field and tile and never hold the key. */
void tdbm_log(const struct tdbm_mount *m, const char *fmt, ...)
{
    char line[TDB_ERROR_MSG_MAX + 128];
    va_list ap;

    if (!m->cfg.log)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    for (char *p = line; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = '?';
    m->cfg.log(m->cfg.arg, line);
}

/* Whether a failure is the engine's (bad bytes, I/O, memory, key), worth a
 * log line, rather than the caller's (no such name, not a folder...). */
static bool tdbm_worth_logging(int code)
{
    return code != TDB_E_NOENT && code != TDB_E_NOTDIR &&
           code != TDB_E_ISDIR && code != TDB_E_INVAL && code != TDB_E_ROFS;
}

/* This thread's message slot of the mount (tdbm_error_take), made on
 * first use; NULL when memory is short. */
static struct tdb_error *tdbm_error_slot(struct tdbm_mount *m)
{
    struct tdb_error *e = pthread_getspecific(m->errkey);

    if (!e && (e = malloc(sizeof *e)) &&
        pthread_setspecific(m->errkey, e) != 0) {
        free(e);
        e = NULL;
    }
    return e;
}

/* Logs "WHAT: message" of a failure and keeps the message for this
 * thread's tdbm_error_take. */
void tdbm_tell(struct tdbm_mount *m, int code, const struct tdb_error *err,
               const char *what)
{
    struct tdb_error *e = tdbm_error_slot(m);

    if (e) {
        e->code = code;
        snprintf(e->msg, sizeof e->msg, "%s", tdb_error_text(code, err));
    }
    tdbm_log(m, "%s: %s", what, tdb_error_text(code, err));
}

/* The -errno of a failed engine call.  An engine failure is logged as
 * "WHAT: message" (WHAT from fmt) and its message kept for this thread's
 * tdbm_error_take; a failure the caller caused is neither. */
int tdbm_fail(struct tdbm_mount *m, int code, const struct tdb_error *err,
              const char *fmt, ...)
{
    char what[128];
    va_list ap;

    if (!tdbm_worth_logging(code))
        return -tdb_errno(code);
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    tdbm_tell(m, code, err, what);
    return -tdb_errno(code);
}

bool tdbm_error_take(struct tdbm_mount *m, struct tdb_error *out)
{
    struct tdb_error *e = pthread_getspecific(m->errkey);

    if (!e || !e->msg[0])
        return false;
    *out = *e;
    e->msg[0] = '\0';
    return true;
}

/* Hands the old root's names to the front end (no lock held). */
void tdbm_invalidate(struct tdbm_mount *m, char **names, size_t n)
{
    if (m->cfg.inval)
        m->cfg.inval(m->cfg.arg, names, n);
    else
        tdbm_names_free(names, n);
}
