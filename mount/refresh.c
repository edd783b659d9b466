/* refresh.c: a new tree made current: after a write of the mount (tdbm_reload) and, with -o refresh, when the source changed elsewhere (tdbm_refresh). */
/*
 * A live mount keeps with each tree the digest of the source's listings
 * (tdb_fs_stamp) taken just before that tree was opened; tdbm_refresh
 * takes it again and opens a new tree when it differs.  Taken before the
 * open, a digest can miss nothing: a change made between it and the open
 * only costs one reopen more.
 */
#include "priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Opens a tree of the source, stamped first when the mount is live (with
 * `stamp` when given, else a digest taken now over the current tree's
 * folders; a digest that fails leaves the tree unstamped, so that the next
 * check reopens).  m->commit held.  @return 0 or a TDB_E_* code with err
 * filled. */
static int tdbm_tree_open(struct tdbm_mount *m, const uint8_t *stamp,
                          struct tdbm_tree **out, struct tdb_error *err)
{
    uint8_t now[TDB_STAMP_BYTES];
    struct tdb_fs *fs;
    int rc;

    *out = NULL;
    tdb_error_clear(err);
    if (m->live && !stamp && tdb_fs_stamp(m->io, m->cur->fs, now, err) == 0)
        stamp = now;
    tdb_error_clear(err);
    rc = tdb_fs_open(&fs, m->io, m->open, err);
    if (rc < 0)
        return rc;
    *out = tdbm_tree_new(fs);
    if (!*out) {
        tdb_fs_close(fs);
        return TDB_E_NOMEM;
    }
    if (stamp)
        memcpy((*out)->stamp, stamp, TDB_STAMP_BYTES);
    (*out)->stamped = stamp != NULL;
    return 0;
}

/* Makes t the current tree; *names receives the old root's entries to
 * invalidate (NULL when out of memory).  m->commit held. */
static void tdbm_tree_swap(struct tdbm_mount *m, struct tdbm_tree *t,
                           char ***names, size_t *n)
{
    struct tdbm_tree *old;
    struct tdb_fs *oldfs;
    bool gone;

    pthread_mutex_lock(&m->lock);
    old = m->cur;
    *names = tdbm_root_names(old, n);
    t->gen = m->next_gen++;
    t->next = m->trees;
    m->trees = t;
    m->cur = t;
    old->retired = true;
    tdbm_tree_settle(m, old, &oldfs, &gone);
    pthread_mutex_unlock(&m->lock);
    tdb_fs_close(oldfs);
    if (gone)
        free(old);
}

/* Opens a new tree and makes it current; *names receives the old root's
 * entries to invalidate.  m->commit held.  @return 0 or a TDB_E_* code
 * (then the old tree stays current). */
int tdbm_reload(struct tdbm_mount *m, char ***names, size_t *n)
{
    struct tdbm_tree *t;
    struct tdb_error err;
    int rc;

    *names = NULL;
    *n = 0;
    rc = tdbm_tree_open(m, NULL, &t, &err);
    if (rc < 0)
        tdbm_log(m, "reopening after a write: %s", tdb_error_text(rc, &err));
    else
        tdbm_tree_swap(m, t, names, n);
    return rc;
}

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
    struct tdbm_tree *t = NULL;
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
        rc = tdbm_tree_open(m, now, &t, &err);
    tdbm_refresh_said(m, rc, &err);
    if (rc == 0)
        tdbm_tree_swap(m, t, &names, &n);
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
    struct tdbm_tree *t;
    struct tdb_error err;
    uint64_t tino;
    char **v;
    int rc;

    *paths = NULL;
    *n = 0;
    if (!m->live || tdb_io_is_url(m->source))
        return 0;
    t = tdbm_tree_pin(m, TDBM_ROOT_INO, &tino);
    if (!t)
        return -ESTALE;
    tdb_error_clear(&err);
    rc = tdb_fs_watch_dirs(t->fs, &dirs, &err);
    tdbm_tree_unpin(m, t, 1);
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
