/* refresh.c: -o refresh: a new generation made current when the source changed elsewhere (tdbm_refresh), and the folders to watch for it. */
/*
 * A live mount keeps with each generation the digest of the source's
 * listings (tdb_fs_stamp) taken just before it was opened; tdbm_refresh
 * takes it again and opens a new generation when it differs.  Taken
 * before the open, a digest can miss nothing: a change made between it
 * and the open only costs one reopen more.
 */
#include "priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Logs a failed check once, until one succeeds again (a server that is
 * down would otherwise log a line each check), and when one does.
 * m->commit held. */
static void tdbm_refresh_said(struct tdbm_mount *m, int rc,
                              const struct tdb_error *err)
{
    if (rc < 0 && !m->refresh_failing)
        tdbm_log(m, "refresh: %s (the mount shows the view it had; "
                 "trying again)", tdb_error_text(rc, err));
    else if (rc >= 0 && m->refresh_failing)
        tdbm_log(m, "refresh: the source answers again");
    m->refresh_failing = rc < 0;
}

int tdbm_refresh(struct tdbm_mount *m)
{
    uint8_t now[TDB_STAMP_BYTES];
    struct tdbm_gen *g = NULL;
    struct tdb_error err;
    char **names = NULL;
    size_t n = 0;
    int rc;

    if (!m->live)
        return 0;
    pthread_mutex_lock(&m->commit);
    tdb_error_clear(&err);
    rc = tdb_fs_stamp(m->io, m->cur->fs, now, &err);
    if (rc == 0 && m->cur->stamped &&
        memcmp(now, m->cur->stamp, TDB_STAMP_BYTES) == 0) {
        tdbm_refresh_said(m, 0, &err);
        pthread_mutex_unlock(&m->commit);
        return 0;
    }
    if (rc == 0)
        rc = tdbm_gen_open(m, now, &g, &err);
    tdbm_refresh_said(m, rc, &err);
    if (rc == 0)
        tdbm_gen_swap(m, g, &names, &n);
    pthread_mutex_unlock(&m->commit);
    if (names)
        tdbm_invalidate(m, names, n);
    return rc < 0 ? -tdb_errno(rc) : 1;
}

unsigned tdbm_refresh_secs(const struct tdbm_mount *m)
{
    return m->live ? m->opts->refresh : 0;
}

/* The local path of io-relative folder `rel` of the source. */
static char *tdbm_local_path(const struct tdbm_mount *m, const char *rel)
{
    char *p;

    if (rel[0] == '/')
        return strdup(rel);
    if (!rel[0])
        return strdup(m->source);
    if (asprintf(&p, "%s/%s", m->source, rel) < 0)
        return NULL;
    return p;
}

int tdbm_watch_dirs(struct tdbm_mount *m, char ***paths, size_t *n)
{
    struct tdb_names dirs;
    struct tdbm_gen *g;
    struct tdb_error err;
    uint64_t tino;
    char **v;
    int rc;

    *paths = NULL;
    *n = 0;
    if (!m->live || tdb_io_is_url(m->source))
        return 0;
    g = tdbm_gen_pin(m, TDBM_ROOT_INO, &tino);
    if (!g)
        return -ESTALE;
    tdb_error_clear(&err);
    rc = tdb_fs_watch_dirs(g->fs, &dirs, &err);
    tdbm_gen_unpin(m, g, 1);
    if (rc < 0)
        return -tdb_errno(rc);
    v = calloc(dirs.n ? dirs.n : 1, sizeof *v);
    for (size_t i = 0; v && i < dirs.n; i++) {
        if (!(v[i] = tdbm_local_path(m, dirs.v[i]))) {
            tdbm_names_free(v, i);
            v = NULL;
        }
    }
    *n = v ? dirs.n : 0;
    tdb_names_free(&dirs);
    if (!v)
        return -ENOMEM;
    *paths = v;
    return 0;
}
