/* writer.c: writing one fragment at format version 22 from staged files (format_spec/fragment.md data files and tiles; docs/LAYOUT.md "Writing"). */
#include "write/wr.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The fragment's timestamp: ts (0: now), but after every committed
 * fragment so that the new one wins, and not before its schema. */
static uint64_t wr_timestamp(const struct wr *w, uint64_t ts)
{
    uint64_t t = ts ? ts : tdb_now_ms();
    const struct tdb_arraydir *dir = w->dir;
    uint64_t newest = 0;
    for (size_t i = 0; i < dir->ncands; i++)
        if (dir->cands[i].ts.t2 > newest)
            newest = dir->cands[i].ts.t2;
    for (size_t i = 0; i < dir->nfrags; i++)
        if (dir->frags[i].ts.t2 > newest)
            newest = dir->frags[i].ts.t2;
    if (dir->nfrags + dir->ncands && t <= newest && newest < UINT64_MAX)
        t = newest + 1;
    if (t < w->s->t2)
        t = w->s->t2;
    return t;
}

static int wr_write(struct wr *w, uint64_t ts)
{
    const struct tdb_io_ops *ops = w->io->ops;
    uint8_t rnd[16];
    int r = tdb_random(rnd, sizeof rnd, w->err);
    if (r)
        return r;
    uint64_t t = w->x && w->x->exact_time && ts ? ts : wr_timestamp(w, ts);
    uint64_t t1 = w->x && w->x->t1 && w->x->t1 <= t ? w->x->t1 : t;
    if (w->distinct)
        tdb_tsname_mark(rnd, t1, t);
    tdb_tsname_make(w->name, sizeof w->name, t1, t, rnd,
                    tdb_schema_fragment_version(w->s));
    if (w->x && w->x->named && (r = w->x->named(w->x->named_arg, w->name,
                                                w->err)))
        return r;
    if (!(w->fragdir = tdb_path_join("__fragments", w->name)) ||
        !(w->meta_path = tdb_path_join(w->fragdir, "__fragment_metadata.tdb")))
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    static const char *const dirs[] = {"__fragments", "__commits"};
    for (size_t i = 0; i < 2; i++)
        if ((r = ops->mkdir(w->io->ctx, dirs[i])))
            return tdb_err(w->err, r, "%s: cannot create: %s", dirs[i],
                           tdb_strerror(r));
    if (tdb_io_exists(w->io, w->fragdir))
        return tdb_err(w->err, TDB_E_IO, "%s: already exists", w->fragdir);
    if ((r = tdb_wr_mark_staged(w)))
        return r;
    if ((r = ops->mkdir(w->io->ctx, w->fragdir)))
        return tdb_err(w->err, r, "%s: cannot create: %s", w->fragdir,
                       tdb_strerror(r));
    w->dir_made = true;
    if ((r = tdb_fmw_create(&w->fmw, w->s, w->s->name, w->dense, w->err)) ||
        (w->x && !w->dense &&
         (r = tdb_fmw_set_extras(w->fmw, w->x, w->err))))
        return r;
    r = w->dense ? tdb_wr_dense_write(w) : tdb_wr_sparse_write(w);
    for (uint32_t i = 0; i < w->nf && !r; i++)
        r = tdb_fmw_set_file_sizes(w->fmw, w->f[i].fid, w->f[i].osize[0],
                                   w->f[i].osize[1], w->f[i].osize[2]);
    if (r)
        return r;
    struct tdb_buf meta = {0};
    r = tdb_fmw_serialize(w->fmw, w->key, &meta, w->err);
    if (!r) {
        r = ops->write_at(w->io->ctx, w->meta_path, 0, meta.data, meta.len);
        w->meta_made = true; /* (a failed write may have made it) */
        if (r)
            tdb_err(w->err, r, "%s: cannot write: %s", w->meta_path,
                    tdb_strerror(r));
    }
    tdb_buf_free(&meta);
    return r ? r : tdb_wr_commit(w);
}

/* Checks everything before anything is written (the staged folder and
 * its files against the schema) and removes the folder of an earlier
 * attempt that did not commit.  A fragment committed before whose staged
 * files are not yet removed is done: its name in *name. */
static int wr_prepare(struct wr *w, char **name)
{
    const struct tdb_io *io = w->io, *staged = w->staged;
    const char *staged_dir = w->sdir;
    int r;
    if (!tdb_io_isdir(staged, staged_dir))
        return tdb_err(w->err, TDB_E_INVAL, "%s: not a folder", staged_dir);
    if ((*name = tdb_wr_already_committed(io, staged, staged_dir)))
        return 0;
    bool has_subarray = false;
    if ((r = tdb_wr_fields_init(w)) || (r = tdb_wr_match_staged(w, &has_subarray)))
        return r;
    if (w->dense) {
        if ((r = tdb_wr_region(w, has_subarray)))
            return r;
        snprintf(w->nfrom, sizeof w->nfrom, "the cells of the region");
        for (uint32_t i = 0; i < w->nf && !r; i++)
            r = tdb_wr_check_sizes(w, &w->f[i], w->ncells);
        for (uint32_t i = 0; i < w->nf && !r; i++)
            r = tdb_wr_check_content(w, &w->f[i], w->ncells);
    } else {
        r = tdb_wr_sparse_prepare(w);
    }
    if (!r)
        r = tdb_fragment_clean(io, staged, staged_dir, NULL, w->err);
    return r;
}

/* The threads of the tile work: rq's, else one per online CPU; at most
 * WR_THREADS_MAX. */
static unsigned wr_threads(unsigned threads)
{
    if (!threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n < 1 ? 1 : n > WR_THREADS_MAX ? WR_THREADS_MAX : (unsigned)n;
    }
    return threads > WR_THREADS_MAX ? WR_THREADS_MAX : threads;
}

/* Loads the array's folder and schemas into w and checks what the write
 * asks of them (special fields in sparse arrays only, a key for an
 * encrypted array). */
static int wr_open(struct wr *w, const uint8_t *key)
{
    struct tdb_error *err = w->err;
    int r = tdb_arraydir_load(w->io, 0, UINT64_MAX, &w->dir, err);
    if (r)
        return r;
    r = tdb_array_schemas_load(w->io, w->dir, key, &w->schemas, &w->s, err);
    tdb_io_settle(w->io);
    if (r)
        return r;
    w->dense = w->s->array_type == TDB_DENSE;
    if (w->dense && w->x && (w->x->timestamps || w->x->delete_meta))
        return tdb_err(err, TDB_E_INVAL, "timestamps and delete metadata are "
                       "stored in sparse fragments only");
    bool encrypted = w->s->encryption == TDB_AES_256_GCM;
    if (encrypted && !key)
        return tdb_err(err, TDB_E_NOKEY, "the array is encrypted: a key is "
                       "needed");
    w->key = encrypted ? key : NULL;
    return 0;
}

/* Frees what the write holds (not the fragment it wrote). */
static void wr_free(struct wr *w)
{
    tdb_fmw_free(w->fmw);
    tdb_wr_fields_free(w);
    free(w->perm);
    free(w->hil);
    free(w->fragdir);
    free(w->meta_path);
    free(w->tmp_commit);
    for (size_t i = 0; i < w->schemas.n; i++)
        tdb_schema_free(w->schemas.v[i]);
    free(w->schemas.v);
    tdb_arraydir_free(w->dir);
}

int tdb_fragment_write(const struct tdb_fragment_req *rq, char **name,
                       struct tdb_error *err)
{
    *name = NULL;
    const struct tdb_io_ops *ops = rq->io->ops;
    if (!ops->write_at || !ops->mkdir || !ops->rename)
        return tdb_err(err, TDB_E_ROFS, "the array's storage is read-only");
    struct wr w;
    memset(&w, 0, sizeof w);
    w.io = rq->io;
    w.staged = rq->staged;
    w.sdir = rq->staged_dir;
    w.x = rq->extras;
    w.err = err;
    w.threads = wr_threads(rq->threads);
    int r = wr_open(&w, rq->key);
    if (!r && !(r = wr_prepare(&w, name)) && !*name) {
        r = wr_write(&w, rq->timestamp_ms);
        if (r)
            tdb_wr_cleanup(&w);
        else if (!(*name = strdup(w.name)))
            r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    wr_free(&w);
    return r;
}
