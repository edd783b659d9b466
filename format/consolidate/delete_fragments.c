/* delete_fragments.c: one fragment removed from an array, as TileDB's
 * Array::delete_fragments_list leaves it: its commit file gone (and, when
 * a consolidated commits file names the commit, an ignore file naming it
 * written first), then its folder.  Unlike TileDB, the commit goes before
 * the folder, so that no reader ever finds a committed fragment with
 * missing files: a kill at any step leaves the fragment either whole and
 * committed, or uncommitted, and a second call finishes the work. */
#include "consolidate/cons.h"

#include <stdio.h>
#include <stdlib.h>

/* The ignore file's bytes name commits relative to the array, one a line
 * (ignore_file.md); TileDB names it with the version it writes. */
static int frag_write_ignore(const struct tdb_io *io, const char *marker,
                             const struct tdb_tsname *ts,
                             struct tdb_cons_result *res,
                             struct tdb_error *err)
{
    char tmp[256], line[TDB_MAX_NAME + 32];
    int n = snprintf(line, sizeof line, "%s\n", marker);
    if (n < 0 || (size_t)n >= sizeof line)
        return tdb_err(err, TDB_E_INVAL, "%s: name too long", marker);
    int r = tdb_cons_name(&(struct tdb_cons_file){"__commits", ts->t1, ts->t2,
                                                  TDB_WRITE_VERSION, ".ign"},
                          res->name, tmp, sizeof tmp, err);
    if (!r)
        r = tdb_io_publish(io, tmp, res->name, line, (size_t)n, err);
    if (r)
        res->name[0] = 0;
    return r;
}

/* Removes the files of fragment folder `dir` (a flat folder: a folder
 * inside is not a fragment's, and is left alone with an error), then the
 * folder. */
static int frag_remove_folder(const struct tdb_io *io, const char *dir,
                              struct tdb_cons_result *res,
                              struct tdb_error *err)
{
    struct tdb_names n = {0};
    int r = tdb_io_names(io, dir, &n, err);
    if (r == TDB_E_NOENT) {
        tdb_error_clear(err);
        return 0;
    }
    for (size_t i = 0; !r && i < n.n; i++) {
        char *p = tdb_path_join(dir, n.v[i]);
        r = !p ? tdb_err(err, TDB_E_NOMEM, "out of memory")
            : n.is_dir[i] ? tdb_err(err, TDB_E_IO, "%s: a folder inside a "
                                    "fragment; left alone", p)
                          : tdb_cons_remove(io, p, res, err);
        free(p);
    }
    tdb_names_free(&n);
    /* (a backend whose folders exist only through their files has none
     * left to remove) */
    if (!r) {
        int d = io->ops->remove(io->ctx, dir);
        if (d == 0)
            res->removed++;
        else if (d != TDB_E_NOENT)
            r = tdb_err(err, d, "%s: cannot remove it", dir);
    }
    return r;
}

/* Fragment `name` that no commit names: what a delete cut short after
 * the commit left (its folder removed unless `uncommit`), or nothing at
 * all (TDB_E_NOENT). */
static int frag_uncommitted(const struct tdb_io *io, const char *name,
                            bool uncommit, struct tdb_cons_result *res,
                            struct tdb_error *err)
{
    char *dir = tdb_path_join("__fragments", name);
    int r;
    if (!dir)
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    else if (uncommit || !tdb_io_isdir(io, dir))
        r = tdb_err(err, TDB_E_NOENT, "__fragments/%s: no such "
                    "committed fragment", name);
    else
        r = frag_remove_folder(io, dir, res, err);
    free(dir);
    return r;
}

/* Takes back the commit of fragment `name` (folder e->path, times ts):
 * its .wrt (or a legacy fragment's .ok) removed, an .ign first when a
 * consolidated commits file names it too. */
static int frag_unmark(const struct tdb_io *io, const struct tdb_dir_entry *e,
                       const char *name, const struct tdb_tsname *ts,
                       struct tdb_cons_result *res, struct tdb_error *err)
{
    struct tdb_commits c = {0};
    char marker[TDB_MAX_NAME + 16];
    bool legacy = strncmp(e->path, "__fragments/", 12) != 0;
    snprintf(marker, sizeof marker, legacy ? "%s.ok" : "__commits/%s.wrt",
             name);
    int r = tdb_arraydir_commits(io, &c, err);
    const struct tdb_commit *cm = NULL;
    for (size_t i = 0; !r && i < c.n; i++)
        if (!strcmp(c.v[i].marker, marker))
            cm = &c.v[i];
    if (!r && !cm)
        r = tdb_err(err, TDB_E_UNSUPPORTED, "%s: committed without %s (by a "
                    "consolidated commits file of the array's folder, or "
                    "by its metadata before format 5): not removed",
                    e->path, marker);
    /* the .con would still commit it: an .ign first */
    if (!r && cm->in_con)
        r = frag_write_ignore(io, marker, ts, res, err);
    if (!r && cm->on_disk)
        r = tdb_cons_remove(io, marker, res, err);
    tdb_commits_free(&c);
    return r;
}

/* Both calls: the commit (and .ign), then, unless `uncommit`, the folder. */
static int frag_delete(const struct tdb_io *io, const char *name,
                       const uint8_t *key, bool uncommit,
                       struct tdb_cons_result *res, struct tdb_error *err)
{
    memset(res, 0, sizeof *res);
    if (!io->ops->write_at || !io->ops->rename || !io->ops->remove)
        return tdb_err(err, TDB_E_ROFS, "the array's storage is read-only");
    struct tdb_tsname ts;
    if (!name[0] || strchr(name, '/') || strlen(name) > TDB_MAX_NAME ||
        tdb_tsname_parse(name, &ts))
        return tdb_err(err, TDB_E_INVAL, "%s: not a fragment's name", name);
    struct tdb_cons_array a;
    int r = tdb_cons_array_load(io, key, &a, err);
    const struct tdb_dir_entry *e = r ? NULL : tdb_arraydir_cand(a.dir, name);
    if (!r && !e)
        r = frag_uncommitted(io, name, uncommit, res, err);
    else if (!r && !(r = frag_unmark(io, e, name, &ts, res, err)) &&
             !uncommit)
        r = frag_remove_folder(io, e->path, res, err);
    /* and what an .ign's write cut short left */
    if (!r)
        r = tdb_cons_sweep(io, res, err);
    tdb_cons_array_free(&a);
    return r;
}

int tdb_fragment_delete(const struct tdb_io *io, const char *name,
                        const uint8_t *key, struct tdb_cons_result *r,
                        struct tdb_error *err)
{
    return frag_delete(io, name, key, false, r, err);
}

int tdb_fragment_uncommit(const struct tdb_io *io, const char *name,
                          const uint8_t *key, struct tdb_cons_result *r,
                          struct tdb_error *err)
{
    return frag_delete(io, name, key, true, r, err);
}
