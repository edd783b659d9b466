/* commits.c: consolidated commits files (consolidated_commits_file.md) and
 * their vacuum, as TileDB's commits consolidation writes and removes them:
 * one __commits/<timestamped name>.con naming every commit, relative to
 * the array, a delete's line followed by the size and bytes of its
 * condition tile. */
#include "consolidate/cons.h"

#include <stdio.h>
#include <stdlib.h>

/* The .con's bytes for commits c into out. */
static int commits_con_bytes(const struct tdb_io *io,
                             const struct tdb_commits *c, struct tdb_buf *out,
                             struct tdb_error *err)
{
    for (size_t i = 0; i < c->n; i++) {
        const struct tdb_commit *e = &c->v[i];
        uint8_t *tile;
        int r = tdb_buf_append(out, e->marker, strlen(e->marker));
        if (!r)
            r = tdb_buf_append(out, "\n", 1);
        if (!r && e->cond_path) {
            r = tdb_buf_put_u64(out, e->cond_size);
            if (!r)
                r = e->cond_size > SIZE_MAX / 2
                        ? TDB_E_NOMEM
                        : tdb_buf_grow(out, (size_t)e->cond_size, &tile);
            if (!r)
                r = tdb_io_read(io, e->cond_path, e->cond_off, tile,
                                (size_t)e->cond_size, err);
            else
                r = tdb_err(err, r, "%s: out of memory", e->marker);
        } else if (r) {
            r = tdb_err(err, r, "%s: out of memory", e->marker);
        }
        if (r)
            return r;
    }
    return 0;
}

/* True when one .con already names every commit: nothing to consolidate
 * (TileDB would write the same list again under a new name). */
static bool commits_done(const struct tdb_commits *c)
{
    if (c->whole < 0 || c->ncons != 1)
        return false;
    for (size_t i = 0; i < c->n; i++)
        if (!c->v[i].in_con)
            return false;
    return true;
}

int tdb_consolidate_commits(const struct tdb_io *io, const uint8_t *key,
                            struct tdb_cons_result *res, struct tdb_error *err)
{
    memset(res, 0, sizeof *res);
    if (!io->ops->write_at || !io->ops->rename || !io->ops->remove)
        return tdb_err(err, TDB_E_ROFS, "the array's storage is read-only");
    struct tdb_cons_array a;
    struct tdb_commits c = {0};
    struct tdb_buf con = {0};
    char tmp[256];
    int r = tdb_cons_array_load(io, key, &a, err);
    if (!r && a.write_version < 12)
        r = tdb_err(err, TDB_E_UNSUPPORTED, "commits are consolidated from "
                    "format version 12 on; this array's is %u",
                    a.write_version);
    if (!r)
        r = tdb_arraydir_commits(io, &c, err);
    if (r || c.n == 0 || commits_done(&c))
        goto done;
    struct tdb_tsname first, last;
    if (tdb_tsname_parse(c.v[0].marker, &first) ||
        tdb_tsname_parse(c.v[c.n - 1].marker, &last)) {
        r = tdb_err(err, TDB_E_CORRUPT, "%s: not a timestamped name",
                    tdb_tsname_parse(c.v[0].marker, &first)
                        ? c.v[0].marker
                        : c.v[c.n - 1].marker);
        goto done;
    }
    r = commits_con_bytes(io, &c, &con, err);
    if (!r)
        r = tdb_cons_name(&(struct tdb_cons_file){"__commits", first.t1,
                                                  last.t2, a.write_version,
                                                  ".con"},
                          res->name, tmp, sizeof tmp, err);
    if (!r)
        r = tdb_io_publish(io, tmp, res->name,
                           con.data ? (const void *)con.data : "",
                           con.len, err);
    if (r)
        res->name[0] = 0;
    else
        res->merged = c.n;
done:
    tdb_buf_free(&con);
    tdb_commits_free(&c);
    tdb_cons_array_free(&a);
    return r;
}

int tdb_vacuum_commits(const struct tdb_io *io, struct tdb_cons_result *res,
                       struct tdb_error *err)
{
    memset(res, 0, sizeof *res);
    if (!io->ops->remove)
        return tdb_err(err, TDB_E_ROFS, "the array's storage is read-only");
    struct tdb_commits c;
    int r = tdb_arraydir_commits(io, &c, err);
    /* the commit files a .con names first: the .con still commits them */
    for (size_t i = 0; !r && i < c.n; i++)
        if (c.v[i].in_con && c.v[i].on_disk)
            r = tdb_cons_remove(io, c.v[i].marker, res, err);
    /* then the lists that one .con makes redundant */
    for (size_t i = 0; !r && c.whole >= 0 && i < c.ncons; i++)
        if ((long)i != c.whole)
            r = tdb_cons_remove(io, c.cons[i], res, err);
    for (size_t i = 0; !r && c.whole >= 0 && i < c.nignores; i++)
        r = tdb_cons_remove(io, c.ignores[i], res, err);
    if (!r)
        r = tdb_cons_sweep(io, res, err);
    tdb_commits_free(&c);
    return r;
}
