/* commit.c: writes to the array (a staged folder committed as a fragment), the reload after each, and the staging folder's set-up. */
#include "priv.h"
#include "tiledb_format_write.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A write timestamp: now in ms, but always after the previous one, so that
 * two writes of one daemon are applied in the order they were made.
 * m->commit held. */
uint64_t tdbm_next_ts(struct tdbm_mount *m)
{
    uint64_t ms;

    for (;;) {
        ms = tdb_now_ms(); /* the engine's clock */
        if (ms > m->last_ts)
            break;
        struct timespec nap = {0, 200000};
        nanosleep(&nap, NULL);
    }
    m->last_ts = ms;
    return ms;
}

/* Hands the old root's names to the front end (no lock held). */
void tdbm_invalidate(struct tdbm_mount *m, char **names, size_t n)
{
    if (m->cfg.inval)
        m->cfg.inval(m->cfg.arg, names, n);
    else
        tdbm_names_free(names, n);
}

/* The errno of a commit refused for its staged input: `mv` prints "Bad
 * message" (EINVAL would print "cannot move ... to a subdirectory of
 * itself"); the reason is in NAME/__error. */
#define TDBM_COMMIT_REFUSED EBADMSG

/* Commits staged folder `name` as a new fragment.  Staged files are read
 * without following any link (tdb_io_posix_nofollow): a link or special
 * file planted in the staging folder is refused, never read.  @return 0
 * or -errno; on bad input -TDBM_COMMIT_REFUSED with the reason in
 * NAME/__error. */
int tdbm_commit(struct tdbm_mount *m, const char *name)
{
    struct tdb_error err;
    struct tdb_io sio;
    char *frag = NULL;
    char **names = NULL;
    size_t n = 0;
    int rc;

    memset(&sio, 0, sizeof sio);
    pthread_mutex_lock(&m->commit);
    rc = tdb_io_posix_nofollow(&sio, tdbm_staging_fd(m->staging));
    if (rc < 0) {
        rc = -tdb_errno(rc);
        goto out;
    }
    tdb_error_clear(&err);
    rc = tdb_fragment_write_threads(m->io, &sio, name, m->open->key,
                                    tdbm_next_ts(m), m->open->threads, &frag,
                                    &err);
    if (rc < 0) {
        const char *why = tdb_error_text(rc, &err);
        int e = tdbm_staging_set_error(m->staging, name, why);
        if (e < 0)
            tdbm_log(m, "__staging/%s/" TDBM_STAGING_ERROR ": %s", name,
                     strerror(-e));
        if (rc != TDB_E_INVAL)
            tdbm_log(m, "commit of __staging/%s: %s", name, why);
        rc = rc == TDB_E_INVAL ? -TDBM_COMMIT_REFUSED : -tdb_errno(rc);
        goto out;
    }
    {
        char why[TDB_ERROR_MSG_MAX];
        if (tdbm_staging_remove(m->staging, name, why, sizeof why) < 0)
            tdbm_log(m, "committed __staging/%s as %s, but removing it: %s",
                     name, frag ? frag : "?", why);
    }
    rc = 0;
    tdbm_reload(m, &names, &n);
out:
    pthread_mutex_unlock(&m->commit);
    tdb_io_free(&sio);
    free(frag);
    if (names)
        tdbm_invalidate(m, names, n);
    return rc;
}

/* Removes the fragment folders that commits of this staging folder began
 * and never committed (killed before the commit file): each staged folder's
 * marker names the fragment its last commit started.  Fragment folders
 * without a commit file that no marker names are left alone: another
 * writer (TileDB itself) may be writing them.  The staging folder is
 * locked, so no other daemon is committing from it. */
static void tdbm_clean_orphans(struct tdbm_mount *m)
{
    struct tdb_error err;
    struct tdb_names n;
    struct tdb_io sio;

    if (tdb_io_posix_nofollow(&sio, tdbm_staging_fd(m->staging)) != 0)
        return;
    tdb_error_clear(&err);
    if (tdb_io_names(&sio, "", &n, &err) == 0) {
        for (size_t i = 0; i < n.n; i++) {
            char *gone = NULL;
            if (!n.is_dir[i])
                continue;
            tdb_error_clear(&err);
            if (tdb_fragment_clean(m->io, &sio, n.v[i], &gone, &err) != 0)
                tdbm_log(m, "__staging/%s: %s", n.v[i], err.msg);
            else if (gone)
                tdbm_log(m, "removed __fragments/%s, left uncommitted by an "
                         "unfinished commit of __staging/%s", gone, n.v[i]);
            free(gone);
        }
        tdb_names_free(&n);
    }
    tdb_io_free(&sio);
}

int tdbm_mount_staging(struct tdbm_mount *m, char *why, size_t cap)
{
    const char *given = m->opts->staging_dir;
    char *dir = NULL, *a, *b;
    int rc = -1;

    if (!m->rw || !m->is_array || m->staging)
        return 0;
    a = strdup(m->source);
    b = strdup(m->source);
    if (!a || !b)
        goto out;
    if (given)
        dir = strdup(given);
    else if (asprintf(&dir, "%s/.%s.tiledbfs-staging", dirname(a),
                      basename(b)) < 0)
        dir = NULL;
    if (!dir)
        goto out;
    {
        char msg[512] = "";
        rc = tdbm_staging_open(&m->staging, dir, msg, sizeof msg);
        if (rc < 0) {
            snprintf(why, cap, "staging_dir %s: %s", dir,
                     msg[0] ? msg : strerror(-rc));
            rc = -1;
        }
    }
    if (rc == 0)
        tdbm_clean_orphans(m);
out:
    if (rc < 0 && (!a || !b || !dir))
        snprintf(why, cap, "%s", strerror(ENOMEM));
    free(a);
    free(b);
    free(dir);
    return rc;
}
