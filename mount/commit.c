/* commit.c: a staged folder committed as a fragment of the array (or, holding __delete or __evolve.json, as a delete of cells or a schema evolution), and the staging folder's set-up. */
#include "priv.h"
#include "tiledb_format_write.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The errno of a commit refused for its staged input: `mv` prints "Bad
 * message" (EINVAL would print "cannot move ... to a subdirectory of
 * itself"); the reason is in NAME/__error. */
#define TDBM_COMMIT_REFUSED EBADMSG

/* Commits staged folder `name` as a new fragment, or as what its
 * __delete or __evolve.json asks for (tdb_staged_gesture).  Staged files are read
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
    rc = tdb_staged_gesture(m->io, &sio, name, m->open->key, &frag, &err);
    if (rc == 1) {
        struct tdb_fragment_req rq = {m->io, &sio, name, m->open->key,
                                      tdbm_next_ts(m), m->open->threads,
                                      NULL};
        rc = tdb_fragment_write(&rq, &frag, &err);
    }
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

/* Removes the uncommitted fragment folder that staged folder `name`'s
 * marker names (a commit that did not finish), logged.  m->commit held
 * or not needed yet.  @return 0 or -errno. */
static int tdbm_clean_marked(struct tdbm_mount *m, const struct tdb_io *sio,
                             const char *name)
{
    struct tdb_error err;
    char *gone = NULL;
    int rc;

    tdb_error_clear(&err);
    rc = tdb_fragment_clean(m->io, sio, name, &gone, &err);
    if (rc != 0)
        tdbm_log(m, "__staging/%s: %s", name, tdb_error_text(rc, &err));
    else if (gone)
        tdbm_log(m, "removed __fragments/%s, left uncommitted by an "
                 "unfinished commit of __staging/%s", gone, name);
    free(gone);
    return rc ? -tdb_errno(rc) : 0;
}

/* Removes the fragment folders that commits of this staging folder began
 * and never committed (killed before the commit file): each staged folder's
 * marker names the fragment its last commit started.  Fragment folders
 * without a commit file that no marker names are left alone: another
 * writer (TileDB itself) may be writing them.  Then the committed staged
 * folders whose removal was cut short (tdb_staged_sweep).  The staging
 * folder is locked, so no other daemon is committing from it. */
static void tdbm_clean_orphans(struct tdbm_mount *m)
{
    struct tdb_error err;
    struct tdb_names n;
    struct tdb_io sio;
    size_t swept = 0;

    if (tdb_io_posix_nofollow(&sio, tdbm_staging_fd(m->staging)) != 0)
        return;
    tdb_error_clear(&err);
    if (tdb_io_names(&sio, "", &n, &err) == 0) {
        for (size_t i = 0; i < n.n; i++)
            if (n.is_dir[i] && !tdbm_staging_reserved(n.v[i]))
                tdbm_clean_marked(m, &sio, n.v[i]);
        tdb_names_free(&n);
    }
    tdb_error_clear(&err);
    if (tdb_staged_sweep(&sio, "", &swept, &err) != 0)
        tdbm_log(m, "__staging: %s", err.msg);
    if (swept)
        tdbm_log(m, "removed %zu committed staged folder%s that an "
                 "interrupted clean-up left", swept, swept == 1 ? "" : "s");
    tdb_io_free(&sio);
}

int tdbm_staging_forget_commit(struct tdbm_mount *m, const char *name)
{
    struct tdb_io sio;
    int rc;

    pthread_mutex_lock(&m->commit);
    rc = tdb_io_posix_nofollow(&sio, tdbm_staging_fd(m->staging));
    rc = rc < 0 ? -tdb_errno(rc) : tdbm_clean_marked(m, &sio, name);
    tdb_io_free(&sio);
    pthread_mutex_unlock(&m->commit);
    return rc;
}

/* -o rw on a local array: the folders a write changes (the array's, and
 * __fragments, __commits and __meta when they exist) must be writable by
 * us, else every commit would fail.  @return 0 or -1 with why set. */
static int tdbm_check_writable(struct tdbm_mount *m, char *why, size_t cap)
{
    static const char *const dirs[] = {"", TDBM_FRAG_DIR, "__commits",
                                       TDBM_META_DIR};
    struct stat st;
    char path[4096];

    if (tdb_io_is_url(m->source))
        return 0;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(path, sizeof path, "%s%s%s", m->source, *dirs[i] ? "/" : "",
                 dirs[i]);
        if (*dirs[i] && stat(path, &st) != 0 && errno == ENOENT)
            continue;
        if (faccessat(AT_FDCWD, path, W_OK | X_OK, AT_EACCESS) != 0) {
            snprintf(why, cap, "-o rw: cannot write to the array: %s: %s",
                     path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* An s3:// array's multipart uploads are recorded in the staging folder:
 * those a killed daemon left are aborted now. */
static void tdbm_abort_uploads(struct tdbm_mount *m, const char *dir)
{
    struct tdb_error err;
    unsigned aborted = 0;
    char *journal = NULL;

    if (!tdb_io_is_url(m->source))
        return;
    if (asprintf(&journal, "%s/%s", dir, TDBM_STAGING_UPLOADS) < 0) {
        tdbm_log(m, "%s: %s", TDBM_STAGING_UPLOADS, strerror(ENOMEM));
        return;
    }
    tdb_error_clear(&err);
    if (tdb_io_s3_journal(m->io, journal, &aborted, &err) != 0)
        tdbm_log(m, "%s", err.msg);
    else if (aborted)
        tdbm_log(m, "aborted %u multipart upload%s that a killed daemon left",
                 aborted, aborted == 1 ? "" : "s");
    free(journal);
}

int tdbm_mount_staging(struct tdbm_mount *m, char *why, size_t cap)
{
    const char *given = m->opts->staging_dir;
    char *dir = NULL, *a, *b;
    int rc = -1;

    if (!m->rw || !m->is_array || m->staging)
        return 0;
    if (tdbm_check_writable(m, why, cap) != 0)
        return -1;
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
    if (rc == 0)
        tdbm_abort_uploads(m, dir);
out:
    if (rc < 0 && (!a || !b || !dir))
        snprintf(why, cap, "%s", strerror(ENOMEM));
    free(a);
    free(b);
    free(dir);
    return rc;
}
