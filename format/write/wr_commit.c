/* wr_commit.c: a fragment write's crash protocol: the staged folder's marker, the commit file published last, the clean-up of a failed or killed write, the removal of a committed staged folder. */
#include "write/wr.h"
#include "core/pool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --------------------------------------------------------------- commit */

#define WR_SYNC_JOBS 8  /* files synced at a time */

static int wr_sync(struct wr *w, const char *path)
{
    if (!w->io->ops->sync)
        return 0;
    int r = w->io->ops->sync(w->io->ctx, path);
    return r ? tdb_err(w->err, r, "%s: cannot sync: %s", path, tdb_strerror(r))
             : 0;
}

/* Records the fragment's name in the staged folder (WR_MARKER). */
int tdb_wr_mark_staged(struct wr *w)
{
    const struct tdb_io *st = w->staged;
    if (!st->ops->write_at)
        return 0;
    char *p = tdb_path_join(w->sdir, WR_MARKER);
    if (!p)
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    if (st->ops->remove)
        st->ops->remove(st->ctx, p);
    int r = st->ops->write_at(st->ctx, p, 0, w->name, strlen(w->name));
    if (!r && st->ops->sync)
        r = st->ops->sync(st->ctx, p);
    if (r)
        tdb_err(w->err, r, "%s: cannot write: %s", p, tdb_strerror(r));
    free(p);
    return r;
}

/* The fragment name in the staged folder's marker (a new string), or NULL
 * when there is none or it is not a fragment name this writer makes. */
static char *wr_marker_name(const struct tdb_io *staged, const char *sdir)
{
    char *p = tdb_path_join(sdir, WR_MARKER), *name = NULL;
    uint64_t size = 0;
    char buf[128];
    struct tdb_tsname ts;
    if (p && !staged->ops->size(staged->ctx, p, &size) && size &&
        size < sizeof buf &&
        !staged->ops->read_at(staged->ctx, p, 0, buf, (size_t)size) &&
        !memchr(buf, '/', (size_t)size) && !memchr(buf, 0, (size_t)size)) {
        buf[size] = 0;
        if (buf[0] == '_' && !tdb_tsname_parse(buf, &ts))
            name = strdup(buf);
    }
    free(p);
    return name;
}

static bool wr_is_committed(const struct tdb_io *io, const char *name)
{
    char wrt[192];
    snprintf(wrt, sizeof wrt, "__commits/%s.wrt", name);
    return tdb_io_exists(io, wrt);
}

/* The name in the staged folder's marker when that fragment is already
 * committed (a repeated commit), else NULL. */
char *tdb_wr_already_committed(const struct tdb_io *io,
                               const struct tdb_io *staged, const char *sdir)
{
    char *name = wr_marker_name(staged, sdir);
    if (name && !wr_is_committed(io, name)) {
        free(name);
        name = NULL;
    }
    return name;
}

int tdb_fragment_clean(const struct tdb_io *io, const struct tdb_io *staged,
                       const char *staged_dir, char **removed,
                       struct tdb_error *err)
{
    if (removed)
        *removed = NULL;
    char *name = wr_marker_name(staged, staged_dir);
    if (!name || wr_is_committed(io, name) || !io->ops->remove) {
        free(name);
        return 0;
    }
    char *dir = tdb_path_join("__fragments", name);
    if (!dir) {
        free(name);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    int r = 0;
    if (tdb_io_isdir(io, dir)) {
        struct tdb_names n;
        r = tdb_io_names(io, dir, &n, err);
        for (size_t i = 0; i < n.n && !r; i++) {
            char *p = tdb_path_join(dir, n.v[i]);
            /* a fragment folder is flat: a sub-folder is not ours */
            r = !p ? tdb_err(err, TDB_E_NOMEM, "out of memory")
                : n.is_dir[i] ? tdb_err(err, TDB_E_IO, "%s: a folder in an "
                                        "uncommitted fragment; left alone", p)
                              : io->ops->remove(io->ctx, p);
            if (r && p && !n.is_dir[i])
                tdb_err(err, r, "%s: cannot remove: %s", p, tdb_strerror(r));
            free(p);
        }
        tdb_names_free(&n);
        /* (a backend whose folders exist only through their files has
         * none left to remove) */
        if (!r && (r = io->ops->remove(io->ctx, dir)) == TDB_E_NOENT)
            r = 0;
        if (r)
            tdb_err(err, r, "%s: cannot remove: %s", dir, tdb_strerror(r));
        if (!r && removed) {
            *removed = name;
            name = NULL;
        }
    }
    free(dir);
    free(name);
    return r;
}

bool tdb_staged_is_trash(const char *name)
{
    struct tdb_tsname ts;
    size_t n = strlen(WR_TRASH);
    return !strncmp(name, WR_TRASH, n) && !strchr(name, '/') &&
           name[n] == '_' && !tdb_tsname_parse(name + n, &ts);
}

/* Removes the files of folder `dir`, the marker last, then the folder.
 * Stops at the first failure. */
static int wr_remove_folder(const struct tdb_io *staged, const char *dir,
                            struct tdb_error *err)
{
    struct tdb_names n;
    int r = tdb_io_names(staged, dir, &n, err);
    bool mark = false;
    for (size_t i = 0; i < n.n && !r; i++) {
        if (!strcmp(n.v[i], WR_MARKER)) {
            mark = true;
            continue;
        }
        char *p = tdb_path_join(dir, n.v[i]);
        r = p ? staged->ops->remove(staged->ctx, p) : TDB_E_NOMEM;
        if (r)
            tdb_err(err, r, "%s: cannot remove: %s", p ? p : n.v[i],
                    tdb_strerror(r));
        free(p);
    }
    tdb_names_free(&n);
    if (!r && mark) {
        char *p = tdb_path_join(dir, WR_MARKER);
        r = p ? staged->ops->remove(staged->ctx, p) : TDB_E_NOMEM;
        if (r)
            tdb_err(err, r, "%s: cannot remove: %s", p ? p : WR_MARKER,
                    tdb_strerror(r));
        free(p);
    }
    /* (a backend whose folders exist only through their files has none
     * left to remove) */
    if (!r && (r = staged->ops->remove(staged->ctx, dir)) == TDB_E_NOENT)
        r = 0;
    if (r)
        tdb_err(err, r, "%s: cannot remove: %s", dir, tdb_strerror(r));
    return r;
}

/* The trash name of staged folder `sdir` committed as fragment `name`: a
 * sibling, WR_TRASH followed by the fragment's name. */
static char *wr_trash_path(const char *sdir, const char *name)
{
    const char *slash = strrchr(sdir, '/');
    size_t plen = slash ? (size_t)(slash - sdir) + 1 : 0;
    char *p = malloc(plen + strlen(WR_TRASH) + strlen(name) + 1);
    if (p)
        sprintf(p, "%.*s%s%s", (int)plen, sdir, WR_TRASH, name);
    return p;
}

int tdb_staged_remove(const struct tdb_io *staged, const char *staged_dir,
                      struct tdb_error *err)
{
    if (!staged->ops->remove)
        return tdb_err(err, TDB_E_ROFS, "%s: read-only", staged_dir);
    const char *base = strrchr(staged_dir, '/');
    base = base ? base + 1 : staged_dir;
    char *name = NULL, *trash = NULL;
    int r = 0;
    if (staged->ops->rename && !tdb_staged_is_trash(base))
        name = wr_marker_name(staged, staged_dir);
    /* the folder's name goes at once: a retry finds the whole folder, its
     * marker naming the committed fragment, or no folder */
    if (name && !(trash = wr_trash_path(staged_dir, name)))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    else if (trash && (r = staged->ops->rename(staged->ctx, staged_dir,
                                               trash)))
        tdb_err(err, r, "%s: cannot rename to %s: %s", staged_dir, trash,
                tdb_strerror(r));
    if (!r)
        r = wr_remove_folder(staged, trash ? trash : staged_dir, err);
    free(name);
    free(trash);
    return r;
}

int tdb_staged_sweep(const struct tdb_io *staged, const char *dir,
                     size_t *removed, struct tdb_error *err)
{
    struct tdb_names n;
    *removed = 0;
    int r = tdb_io_names(staged, dir, &n, err);
    for (size_t i = 0; i < n.n && !r; i++) {
        if (!n.is_dir[i] || !tdb_staged_is_trash(n.v[i]))
            continue;
        char *p = tdb_path_join(dir, n.v[i]);
        r = p ? wr_remove_folder(staged, p, err)
              : tdb_err(err, TDB_E_NOMEM, "out of memory");
        if (!r)
            (*removed)++;
        free(p);
    }
    tdb_names_free(&n);
    return r;
}

/* Syncs the fragment's files, then publishes it: an empty commit file
 * written under a temporary name in the fragment's folder and renamed into
 * __commits by tdb_io_publish (the rename is the commit). */
struct wr_syncs {
    struct wr *w;
    char **paths;
};

static int wr_sync_one(void *arg, size_t i, struct tdb_error *err)
{
    struct wr_syncs *ws = arg;
    const struct tdb_io *io = ws->w->io;
    int r = io->ops->sync ? io->ops->sync(io->ctx, ws->paths[i]) : 0;
    return r ? tdb_err(err, r, "%s: cannot sync: %s", ws->paths[i],
                       tdb_strerror(r))
             : 0;
}

int tdb_wr_commit(struct wr *w)
{
    struct wr_syncs ws = {.w = w,
                          .paths = calloc((size_t)w->nf * 3 + 1,
                                          sizeof(char *))};
    size_t n = 0;
    int r = ws.paths ? 0 : tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < w->nf && !r; i++)
        for (int o = 0; o < 3 && !r; o++)
            if (w->f[i].created[o] &&
                !(ws.paths[n++] = tdb_path_join(w->fragdir, w->f[i].out[o])))
                r = tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    /* the fragment's files at once (on an object store each upload
     * waits out round trips of its own), then its metadata */
    if (!r)
        r = tdb_pool_each(WR_SYNC_JOBS, n, wr_sync_one, &ws, w->err);
    for (size_t i = 0; ws.paths && i < n; i++)
        free(ws.paths[i]);
    free(ws.paths);
    if (!r)
        r = wr_sync(w, w->meta_path);
    if (!r)
        r = wr_sync(w, w->fragdir);
    if (r)
        return r;
    if (!(w->tmp_commit = tdb_path_join(w->fragdir, "__commit.tmp")))
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    char wrt[192];
    snprintf(wrt, sizeof wrt, "__commits/%s.wrt", w->name);
    return tdb_io_publish(w->io, w->tmp_commit, wrt, "", 0, w->err);
}

/* Removes what a failed write left (best effort). */
void tdb_wr_cleanup(struct wr *w)
{
    if (!w->dir_made || !w->io->ops->remove)
        return;
    for (uint32_t i = 0; i < w->nf; i++)
        for (int o = 0; o < 3; o++) {
            if (!w->f[i].created[o])
                continue;
            char *p = tdb_path_join(w->fragdir, w->f[i].out[o]);
            if (p)
                w->io->ops->remove(w->io->ctx, p);
            free(p);
        }
    if (w->meta_made)
        w->io->ops->remove(w->io->ctx, w->meta_path);
    w->io->ops->remove(w->io->ctx, w->fragdir);
}
