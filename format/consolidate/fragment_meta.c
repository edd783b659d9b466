/* fragment_meta.c: consolidated fragment metadata files
 * (consolidated_fragment_metadata_file.md) and their vacuum, as TileDB's
 * fragment metadata consolidation writes and removes them: one generic
 * tile holding the number of fragments, each one's name and the offset of
 * its footer, then the footers, byte for byte as each fragment's own
 * __fragment_metadata.tdb ends. */
#include "consolidate/cons.h"
#include "model/fragmeta.h"
#include "write/writer.h"

#include <stdlib.h>

/* The footers of the array's live fragments (format 3 on), oldest first. */
struct fm_footers {
    size_t n;
    const struct tdb_dir_entry **e;
    uint8_t **bytes;
    uint64_t *size;
};

static void fm_footers_free(struct fm_footers *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->bytes[i]);
    free(f->e);
    free(f->bytes);
    free(f->size);
}

/* Reads the footer of every fragment of a that has one of its own. */
static int fm_footers_read(const struct tdb_io *io,
                           const struct tdb_cons_array *a,
                           struct fm_footers *f, struct tdb_error *err)
{
    size_t n = a->dir->nfrags ? a->dir->nfrags : 1;
    memset(f, 0, sizeof *f);
    f->e = calloc(n, sizeof *f->e);
    f->bytes = calloc(n, sizeof *f->bytes);
    f->size = calloc(n, sizeof *f->size);
    if (!f->e || !f->bytes || !f->size)
        return tdb_err(err, TDB_E_NOMEM, "fragment metadata: out of memory");
    for (size_t i = 0; i < a->dir->nfrags; i++) {
        const struct tdb_dir_entry *e = &a->dir->frags[i];
        struct tdb_fragmeta *fm;
        struct tdb_fragmeta_src src = {.io = io, .path = e->path,
                                       .name = e->name,
                                       .schemas = &a->schemas, .key = a->key};
        int r = tdb_fragmeta_load(&src, &fm, err);
        if (r)
            return r;
        uint64_t off = fm->footer_offset, size = fm->footer_size;
        bool own = fm->name_version > 2;
        const char *mp = own ? strdup(fm->meta_path) : NULL;
        tdb_fragmeta_free(fm);
        if (!own)
            continue;           /* formats 1 and 2 keep no footer */
        uint8_t *b = mp ? malloc(size ? (size_t)size : 1) : NULL;
        if (!b) {
            free((void *)mp);
            return tdb_err(err, TDB_E_NOMEM, "%s: out of memory", e->path);
        }
        r = tdb_io_read(io, mp, off, b, (size_t)size, err);
        free((void *)mp);
        if (r) {
            free(b);
            return r;
        }
        f->e[f->n] = e;
        f->bytes[f->n] = b;
        f->size[f->n++] = size;
    }
    return 0;
}

/* The file's contents: u32 count, then per fragment u64 name length, the
 * name, u64 offset of its footer; then the footers. */
static int fm_payload(const struct fm_footers *f, struct tdb_buf *out)
{
    uint64_t off = 4;
    for (size_t i = 0; i < f->n; i++)
        off += 16 + strlen(f->e[i]->name);
    int r = tdb_buf_put_u32(out, (uint32_t)f->n);
    for (size_t i = 0; !r && i < f->n; i++) {
        size_t nl = strlen(f->e[i]->name);
        r = tdb_buf_put_u64(out, nl);
        if (!r)
            r = tdb_buf_append(out, f->e[i]->name, nl);
        if (!r)
            r = tdb_buf_put_u64(out, off);
        off += f->size[i];
    }
    for (size_t i = 0; !r && i < f->n; i++)
        r = tdb_buf_append(out, f->bytes[i], (size_t)f->size[i]);
    return r;
}

/* True when a consolidated fragment metadata file of the array already
 * holds the footers of exactly these fragments, in this order (TileDB
 * would write the same contents again under a new name). */
static bool fm_done(const struct tdb_io *io, const struct tdb_cons_array *a,
                    const struct fm_footers *f)
{
    for (size_t i = 0; i < a->dir->nfragmeta; i++) {
        struct tdb_cons_fragmeta *c;
        struct tdb_error err;
        if (tdb_cons_fragmeta_load(io, a->dir->fragmeta[i].path, a->key, &c,
                                   &err))
            continue;   /* not one to keep: the new file supersedes it */
        bool same = c->n == f->n;
        for (size_t k = 0; same && k < f->n; k++)
            same = !strcmp(c->names[k], f->e[k]->name);
        tdb_cons_fragmeta_free(c);
        if (same)
            return true;
    }
    return false;
}

/* Where TileDB keeps them: __fragment_meta from format 12, before it the
 * array's own folder. */
static const char *fm_dir(uint32_t write_version)
{
    return write_version >= 12 ? "__fragment_meta" : "";
}

int tdb_consolidate_fragment_meta(const struct tdb_io *io, const uint8_t *key,
                                  struct tdb_cons_result *res,
                                  struct tdb_error *err)
{
    memset(res, 0, sizeof *res);
    if (!io->ops->write_at || !io->ops->rename || !io->ops->mkdir)
        return tdb_err(err, TDB_E_ROFS, "the array's storage is read-only");
    struct tdb_cons_array a;
    struct fm_footers f = {0};
    struct tdb_buf payload = {0}, file = {0};
    char tmp[256];
    int r = tdb_cons_array_load(io, key, &a, err);
    if (!r)
        r = fm_footers_read(io, &a, &f, err);
    /* as TileDB: nothing to do for fewer than two fragments */
    if (r || f.n < 2 || fm_done(io, &a, &f))
        goto done;
    const char *dir = fm_dir(a.write_version);
    if (dir[0] && !tdb_io_exists(io, dir) &&
        (r = io->ops->mkdir(io->ctx, dir)) != 0) {
        r = tdb_err(err, r, "%s: cannot make the folder", dir);
        goto done;
    }
    if (fm_payload(&f, &payload)) {
        r = tdb_err(err, TDB_E_NOMEM, "fragment metadata: out of memory");
        goto done;
    }
    r = tdb_write_generic_tile(&payload, a.key, &file, err);
    if (!r)
        r = tdb_cons_name(&(struct tdb_cons_file){dir, f.e[0]->ts.t1,
                                                  f.e[f.n - 1]->ts.t2,
                                                  a.write_version, ".meta"},
                          res->name, tmp, sizeof tmp, err);
    if (!r)
        r = tdb_io_publish(io, tmp, res->name, file.data, file.len, err);
    if (r)
        res->name[0] = 0;
    else
        res->merged = f.n;
done:
    tdb_buf_free(&payload);
    tdb_buf_free(&file);
    fm_footers_free(&f);
    tdb_cons_array_free(&a);
    return r;
}

int tdb_vacuum_fragment_meta(const struct tdb_io *io,
                             struct tdb_cons_result *res,
                             struct tdb_error *err)
{
    memset(res, 0, sizeof *res);
    if (!io->ops->remove)
        return tdb_err(err, TDB_E_ROFS, "the array's storage is read-only");
    struct tdb_arraydir *d;
    int r = tdb_arraydir_load(io, 0, UINT64_MAX, &d, err);
    if (r)
        return r;
    /* every file but those of the latest end time, as TileDB keeps */
    uint64_t latest = 0;
    for (size_t i = 0; i < d->nfragmeta; i++)
        if (d->fragmeta[i].ts.t2 > latest)
            latest = d->fragmeta[i].ts.t2;
    for (size_t i = 0; !r && i < d->nfragmeta; i++)
        if (d->fragmeta[i].ts.t2 != latest)
            r = tdb_cons_remove(io, d->fragmeta[i].path, res, err);
    if (!r)
        r = tdb_cons_sweep(io, res, err);
    tdb_arraydir_free(d);
    return r;
}
