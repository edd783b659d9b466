/* wr_tiles.c: the tile jobs of a fragment write: staged bytes gathered into tiles, filtered, appended and recorded in order, on a pool of threads. */
#include "write/wr.h"
#include "core/pool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One piece of a tile: `len` bytes at `from` of a staged part go to `to`. */
struct wr_piece {
    uint64_t from, len, to;
};

static int wr_piece_cmp(const void *a, const void *b)
{
    const struct wr_piece *x = a, *y = b;
    return x->from < y->from ? -1 : x->from > y->from;
}

/* Dense: one row of a space tile (its cells along the fastest dimension
 * of the cell order) inside the region: tile cells [to, to + n) are the
 * staged cells src, src + step, ... (step: wr_dense.stride of that
 * dimension, 1 in a row-major array). */
struct wr_run {
    uint64_t src, n, to;
};

/* Scratch memory of one thread doing tile work. */
struct wr_scratch {
    struct tdb_buf tmp;         /* merged staged reads */
    struct wr_piece *pc;
    size_t pc_cap;
    struct wr_run *run;         /* dense: the runs of tile run_tile */
    uint64_t nrun;
    uint64_t run_tile;          /* UINT64_MAX: none */
    uint64_t *src;              /* dense var-sized: the staged cell of each
                                 * cell of tile src_tile */
    uint64_t src_tile;          /* UINT64_MAX: none */
    struct tdb_scratch *fsc;    /* the filters' (a ZSTD context); NULL:
                                 * none could be made, they do without */
};

static void wr_scratch_init(struct wr_scratch *sc)
{
    memset(sc, 0, sizeof *sc);
    sc->src_tile = sc->run_tile = UINT64_MAX;
    sc->fsc = calloc(1, sizeof *sc->fsc);
}

static void wr_scratch_free(struct wr_scratch *sc)
{
    tdb_buf_free(&sc->tmp);
    free(sc->pc);
    free(sc->run);
    free(sc->src);
    tdb_scratch_free(sc->fsc);
    memset(sc, 0, sizeof *sc);
}

/* Room for n pieces in sc->pc. */
static int wr_pieces(struct wr_scratch *sc, uint64_t n, struct tdb_error *err)
{
    if (n <= sc->pc_cap)
        return 0;
    size_t cap = sc->pc_cap ? sc->pc_cap : 256;
    while (cap < n)
        cap *= 2;
    struct wr_piece *pc = realloc(sc->pc, cap * sizeof *pc);
    if (!pc)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    sc->pc = pc;
    sc->pc_cap = cap;
    return 0;
}

/* Appends piece (from, len, to) to the np pieces of sc, merged into the
 * last one when it continues it in the staged file and in the tile. */
static void wr_piece_add(struct wr_scratch *sc, size_t *np, uint64_t from,
                         uint64_t len, uint64_t to)
{
    if (*np) {
        struct wr_piece *l = &sc->pc[*np - 1];
        if (l->from + l->len == from && l->to + l->len == to) {
            l->len += len;
            return;
        }
    }
    sc->pc[(*np)++] = (struct wr_piece){from, len, to};
}

/* Copies the pieces of part p of field f into out: from memory for a
 * sparse dimension, else by merged reads of the staged file (a read of a
 * single piece goes straight to out). */
static int wr_gather(const struct wr *w, struct wr_scratch *sc,
                     const struct wr_field *f, int p, size_t n, uint8_t *out,
                     struct tdb_error *err)
{
    struct wr_piece *pc = sc->pc;
    if (f->mem[p]) {
        for (size_t i = 0; i < n; i++)
            if (pc[i].len)
                memcpy(out + pc[i].to, f->mem[p] + pc[i].from, (size_t)pc[i].len);
        return 0;
    }
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = pc[i - 1].from <= pc[i].from;
    if (!sorted)
        qsort(pc, n, sizeof *pc, wr_piece_cmp);
    size_t i = 0;
    while (i < n) {
        if (!pc[i].len) {
            i++;
            continue;
        }
        uint64_t start = pc[i].from, end = pc[i].from + pc[i].len;
        size_t j = i + 1;
        for (; j < n; j++) {
            if (pc[j].from > end + WR_GAP)
                break;
            uint64_t e = pc[j].from + pc[j].len;
            if (e < end)
                e = end;
            if (e - start > WR_READ_MAX)
                break;
            end = e;
        }
        size_t len = (size_t)(end - start);
        int r;
        if (j == i + 1) {
            struct wr_read rd = {p, start, out + pc[i].to, len};
            r = tdb_wr_sread_e(w, f, &rd, err);
            if (r)
                return r;
            i = j;
            continue;
        }
        tdb_buf_reset(&sc->tmp);
        if (tdb_buf_reserve(&sc->tmp, len))
            return tdb_err(err, TDB_E_NOMEM, "out of memory");
        struct wr_read rd = {p, start, sc->tmp.data, len};
        r = tdb_wr_sread_e(w, f, &rd, err);
        if (r)
            return r;
        for (size_t k = i; k < j; k++)
            if (pc[k].len)
                memcpy(out + pc[k].to, sc->tmp.data + (pc[k].from - start),
                       (size_t)pc[k].len);
        i = j;
    }
    return 0;
}

/* ---------------------------------------------------------------- output */

/* The tile work (staged reads, tile metadata, filters) of one tile of one
 * field is a job; jobs run on the pool's threads (or in the calling thread
 * when there is none) and the calling thread appends their filtered tiles
 * to the fragment's files and records their metadata strictly in job
 * order, tile by tile and field by field: the same write calls, in the
 * same order, with the same bytes, as one thread doing it all. */

/* A filtered tile for output file o. */
struct wr_out {
    int o;
    struct tdb_buf b;
};

enum { WR_JOB_FREE, WR_JOB_QUEUED, WR_JOB_DONE };

struct wr_job {
    uint64_t t;                 /* tile */
    uint32_t fi;                /* field (index in w->f) */
    const uint64_t *src;        /* sparse: the tile's cells; dense: NULL */
    uint64_t m;                 /* cells of the tile */
    /* results: the tiles to append, in order, then rc (and err) */
    struct wr_out out[3];
    unsigned nout;
    uint8_t *data, *valid;      /* the tile's contents (st points in) */
    uint64_t *rel;
    uint64_t size;
    struct tdb_fmw_stats st;
    int rc;
    struct tdb_error err;
    int state;
};

static void wr_job_clear(struct wr_job *job)
{
    free(job->data);
    free(job->valid);
    free(job->rel);
    job->data = job->valid = NULL;
    job->rel = NULL;
}

static void wr_job_free(struct wr_job *job)
{
    wr_job_clear(job);
    for (int k = 0; k < 3; k++)
        tdb_buf_free(&job->out[k].b);
}

/* Appends n bytes to output file o of f; *at receives where they start. */
static int wr_append(struct wr *w, struct wr_field *f, int o, const uint8_t *p,
                     size_t n, uint64_t *at)
{
    char *path = tdb_path_join(w->fragdir, f->out[o]);
    if (!path)
        return tdb_err(w->err, TDB_E_NOMEM, "out of memory");
    int r = w->io->ops->write_at(w->io->ctx, path, f->osize[o], p, n);
    free(path);
    f->created[o] = true; /* even a failed first write may have made it */
    if (r)
        return tdb_err(w->err, r, "%s/%s: cannot write %zu bytes: %s",
                       w->fragdir, f->out[o], n, tdb_strerror(r));
    *at = f->osize[o];
    f->osize[o] += n;
    return 0;
}

/* A tile to filter: `size` bytes of values of `type`, cs bytes a cell
 * (var-sized: a value, with the cells' offsets). */
struct wr_tile {
    const struct tdb_pipeline *p;
    unsigned type;
    uint64_t cs;
    bool is_var;
    const uint8_t *data;
    size_t size;
    const uint64_t *offs;
    uint64_t noffs;
};

/* The next output of job: the tile filtered for output file o of its
 * field. */
static int wr_emit(const struct wr *w, struct wr_scratch *sc,
                   struct wr_job *job, int o, const struct wr_tile *tl)
{
    const struct wr_field *f = &w->f[job->fi];
    char what[512];
    snprintf(what, sizeof what, "%s/%s: tile %llu", w->fragdir, f->out[o],
             (unsigned long long)job->t);
    struct tdb_tile_desc d = {
        .datatype = tl->type,
        .cell_size = tl->cs,
        .version = tdb_schema_fragment_version(w->s),
        .is_var = tl->is_var,
        .key = w->key,
        .what = what,
        .scratch = sc->fsc,
        .in_offsets = tl->offs,
        .n_offsets = tl->noffs,
    };
    struct wr_out *out = &job->out[job->nout];
    tdb_buf_reset(&out->b);
    int r = tdb_pipeline_encode(tl->p, &d, tl->data, tl->size, &out->b,
                                &job->err);
    if (r)
        return r;
    out->o = o;
    job->nout++;
    return 0;
}

/* Dense: the runs of space tile t, in the tile's cell order, into run
 * (room for tcells / ext[d0] of them: one per row); @return their count.
 * Rows outside the region have none. */
static uint64_t wr_dense_runs(const struct wr *w, uint64_t t, struct wr_run *run)
{
    const struct wr_dense *g = &w->dg;
    uint32_t nd = g->nd;
    bool tcol = w->s->tile_order == TDB_COL_MAJOR;
    bool ccol = w->s->cell_order == TDB_COL_MAJOR;
    uint64_t tc[TDB_MAX_DIMS] = {0}, rest = t;
    for (uint32_t k = 0; k < nd; k++) {
        uint32_t d = tcol ? k : nd - 1 - k;
        tc[d] = g->tlo[d] + rest % g->ntl[d];
        rest /= g->ntl[d];
    }
    /* dk[0] varies fastest in the cell order; cnt[k] counts along dk[k] */
    uint32_t dk[TDB_MAX_DIMS] = {0};
    uint64_t cnt[TDB_MAX_DIMS];
    for (uint32_t k = 0; k < nd; k++) {
        dk[k] = ccol ? k : nd - 1 - k;
        cnt[k] = 0;
    }
    uint32_t d0 = dk[0];
    uint64_t o0 = tc[d0] * g->ext[d0], e = g->ext[d0], c = 0, nr = 0;
    bool cols = o0 + e - 1 >= w->rlo[d0] && o0 <= w->rhi[d0];
    /* the cells [jlo, jhi) of each row are in the region (when the row is) */
    uint64_t jlo = w->rlo[d0] > o0 ? w->rlo[d0] - o0 : 0;
    uint64_t jhi = w->rhi[d0] - o0 + 1 < e ? w->rhi[d0] - o0 + 1 : e;
    for (;; c += e) {
        bool in = cols;
        uint64_t base = 0;
        for (uint32_t k = 1; k < nd && in; k++) {
            uint32_t d = dk[k];
            uint64_t o = tc[d] * g->ext[d] + cnt[k];
            if (o < w->rlo[d] || o > w->rhi[d])
                in = false;
            else
                base += (o - w->rlo[d]) * g->stride[d];
        }
        if (in)
            run[nr++] = (struct wr_run){
                base + (o0 + jlo - w->rlo[d0]) * g->stride[d0], jhi - jlo,
                c + jlo};
        uint32_t k = 1;
        while (k < nd && ++cnt[k] == g->ext[dk[k]])
            cnt[k++] = 0;
        if (k >= nd)
            break;
    }
    return nr;
}

/* Dense: the runs of the job's tile in sc (computed once per tile). */
static int wr_job_runs(const struct wr *w, struct wr_scratch *sc,
                       const struct wr_job *job, struct tdb_error *err)
{
    if (sc->run_tile == job->t)
        return 0;
    const struct wr_dense *g = &w->dg;
    uint32_t d0 = w->s->cell_order == TDB_COL_MAJOR ? 0 : g->nd - 1;
    if (!sc->run && !(sc->run = malloc((size_t)(g->tcells / g->ext[d0]) *
                                       sizeof *sc->run)))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    sc->nrun = wr_dense_runs(w, job->t, sc->run);
    sc->run_tile = job->t;
    return 0;
}

/* Dense: the staged cell of each cell of the job's tile (WR_NONE: outside
 * the region), in the tile's cell order, in sc->src. */
static int wr_job_src(const struct wr *w, struct wr_scratch *sc,
                      const struct wr_job *job, struct tdb_error *err)
{
    if (sc->src_tile == job->t)
        return 0;
    int r = wr_job_runs(w, sc, job, err);
    if (r)
        return r;
    const struct wr_dense *g = &w->dg;
    uint32_t d0 = w->s->cell_order == TDB_COL_MAJOR ? 0 : g->nd - 1;
    uint64_t step = g->stride[d0];
    if (!sc->src && !(sc->src = malloc((size_t)g->tcells * sizeof *sc->src)))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    for (uint64_t k = 0; k < g->tcells; k++)
        sc->src[k] = WR_NONE;
    for (uint64_t i = 0; i < sc->nrun; i++) {
        const struct wr_run *u = &sc->run[i];
        for (uint64_t j = 0; j < u->n; j++)
            sc->src[u->to + j] = u->src + j * step;
    }
    sc->src_tile = job->t;
    return 0;
}

/* The pieces (in sc->pc, *np of them) that gather the job's cells of `cs`
 * bytes each from a staged file of such cells; *full: every cell of the
 * tile is written (else the rest must be zeroed). */
static int wr_cell_pieces(const struct wr *w, struct wr_scratch *sc,
                          struct wr_job *job, uint64_t cs, size_t *np,
                          bool *full)
{
    struct tdb_error *err = &job->err;
    uint64_t m = job->m;
    int r = wr_pieces(sc, m, err);
    if (r)
        return r;
    *np = 0;
    if (job->src) {
        const uint64_t *src = job->src;
        for (uint64_t k = 0, e; k < m; k = e) {
            e = k + 1;
            while (e < m && src[e] == src[e - 1] + 1)
                e++;
            wr_piece_add(sc, np, src[k] * cs, (e - k) * cs, k * cs);
        }
        *full = true;
        return 0;
    }
    if ((r = wr_job_runs(w, sc, job, err)))
        return r;
    const struct wr_dense *g = &w->dg;
    uint32_t d0 = w->s->cell_order == TDB_COL_MAJOR ? 0 : g->nd - 1;
    uint64_t step = g->stride[d0], covered = 0;
    for (uint64_t i = 0; i < sc->nrun; i++) {
        const struct wr_run *u = &sc->run[i];
        if (step == 1)
            wr_piece_add(sc, np, u->src * cs, u->n * cs, u->to * cs);
        else
            for (uint64_t j = 0; j < u->n; j++)
                wr_piece_add(sc, np, (u->src + j * step) * cs, cs,
                             (u->to + j) * cs);
        covered += u->n;
    }
    *full = covered == m;
    return 0;
}

/* The validity tile of the job's field: one byte per tile cell, 0 where
 * not written. */
static int wr_validity_tile(const struct wr *w, struct wr_scratch *sc,
                            struct wr_job *job)
{
    const struct wr_field *f = &w->f[job->fi];
    uint64_t m = job->m;
    size_t np;
    bool full;
    int r = wr_cell_pieces(w, sc, job, 1, &np, &full);
    if (r)
        return r;
    uint8_t *v = full ? malloc((size_t)m ? (size_t)m : 1)
                      : calloc((size_t)m ? (size_t)m : 1, 1);
    if (!v)
        return tdb_err(&job->err, TDB_E_NOMEM, "out of memory");
    job->valid = v;
    r = wr_gather(w, sc, f, WR_VALIDITY, np, v, &job->err);
    struct wr_tile tl = {.p = &w->s->validity_filters, .type = TDB_UINT8,
                         .cs = 1, .data = v, .size = (size_t)m};
    if (!r)
        r = wr_emit(w, sc, job, WR_OUT_VALIDITY, &tl);
    return r;
}

/* A fixed-size field's tile: *size bytes gathered into job->data. */
static int wr_job_fixed(const struct wr *w, struct wr_scratch *sc,
                        struct wr_job *job, uint64_t *size)
{
    const struct wr_field *f = &w->f[job->fi];
    struct tdb_error *err = &job->err;
    uint64_t m = job->m;
    size_t np;
    bool full;
    int r;
    if (!tdb_mul_ok(m, f->cell_size, size) || *size > TDB_MAX_TILE_BYTES)
        return tdb_err(err, TDB_E_UNSUPPORTED, "%s: tiles of %llu cells "
                       "of %llu bytes are too large", f->out[0],
                       (unsigned long long)m,
                       (unsigned long long)f->cell_size);
    if ((r = wr_cell_pieces(w, sc, job, f->cell_size, &np, &full)))
        return r;
    size_t n = (size_t)*size ? (size_t)*size : 1;
    if (!(job->data = full ? malloc(n) : calloc(n, 1)))
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    r = wr_gather(w, sc, f, WR_VALUES, np, job->data, err);
    struct wr_tile tl = {.p = f->filters, .type = f->type,
                         .cs = f->cell_size, .data = job->data,
                         .size = (size_t)*size};
    if (!r)
        r = wr_emit(w, sc, job, WR_OUT_FIXED, &tl);
    return r;
}

/* The start and end of each staged cell src[k]'s value, into se (16 bytes
 * a cell; nothing for cells not written). */
static int wr_var_bounds(const struct wr *w, struct wr_scratch *sc,
                         struct wr_job *job, const uint64_t *src, uint8_t *se)
{
    const struct wr_field *f = &w->f[job->fi];
    size_t np = 0;
    for (uint64_t k = 0; k < job->m; k++) {
        if (src[k] == WR_NONE)
            continue;
        wr_piece_add(sc, &np, src[k] * 8, 8, 16 * k);
        if (src[k] + 1 < w->ncells)
            wr_piece_add(sc, &np, (src[k] + 1) * 8, 8, 16 * k + 8);
        else
            tdb_st64(se + 16 * k + 8, f->ssize[WR_VALUES]);
    }
    return wr_gather(w, sc, f, WR_OFFSETS, np, se, &job->err);
}

/* The pieces that gather the values bounded by se, each cell's offset in
 * the tile in rel[] and (as stored) ob; *size the tile's bytes. */
static int wr_var_layout(const struct wr *w, struct wr_scratch *sc,
                         struct wr_job *job, const uint8_t *se, uint8_t *ob,
                         size_t *np)
{
    const struct wr_field *f = &w->f[job->fi];
    const uint64_t *src = job->src ? job->src : sc->src;
    uint64_t size = 0;
    int r = 0;
    *np = 0;
    for (uint64_t k = 0; k < job->m && !r; k++) {
        uint64_t len = f->vsize;
        job->rel[k] = size;
        if (src[k] != WR_NONE) {
            uint64_t st = tdb_le64(se + 16 * k), en = tdb_le64(se + 16 * k + 8);
            len = en - st;
            if (len)
                wr_piece_add(sc, np, st, len, size);
        }
        tdb_st64(ob + 8 * k, size);
        if (!tdb_add_ok(size, len, &size) || size > TDB_MAX_TILE_BYTES)
            r = tdb_err(&job->err, TDB_E_UNSUPPORTED, "%s: tile %llu is "
                        "larger than %llu bytes", f->out[WR_OUT_VAR],
                        (unsigned long long)job->t,
                        (unsigned long long)TDB_MAX_TILE_BYTES);
    }
    job->size = size;
    return r;
}

/* The offsets tile of a var-sized field: ob, or an empty tile (no chunks)
 * when the filter stores the offsets. */
static int wr_var_offsets(const struct wr *w, struct wr_scratch *sc,
                          struct wr_job *job, const uint8_t *ob)
{
    const struct wr_field *f = &w->f[job->fi];
    if (f->skip_offsets) {
        static const uint8_t zero[8] = {0};
        struct wr_out *out = &job->out[job->nout];
        tdb_buf_reset(&out->b);
        if (tdb_buf_append(&out->b, zero, 8))
            return tdb_err(&job->err, TDB_E_NOMEM, "out of memory");
        out->o = WR_OUT_FIXED;
        job->nout++;
        return 0;
    }
    struct wr_tile tl = {.p = &w->s->offsets_filters, .type = TDB_UINT64,
                         .cs = 8, .data = ob, .size = (size_t)job->m * 8};
    return wr_emit(w, sc, job, WR_OUT_FIXED, &tl);
}

/* A var-sized field's tile: *size value bytes gathered into job->data,
 * the cells' offsets in job->rel. */
static int wr_job_var(const struct wr *w, struct wr_scratch *sc,
                      struct wr_job *job, uint64_t *size)
{
    const struct wr_field *f = &w->f[job->fi];
    struct tdb_error *err = &job->err;
    uint64_t m = job->m;
    int r;
    if (!job->src && (r = wr_job_src(w, sc, job, err)))
        return r;
    uint8_t *se = malloc((size_t)m * 16 + 1);
    uint64_t *rel = job->rel = malloc((size_t)m * sizeof *rel + 1);
    uint8_t *ob = malloc((size_t)m * 8 + 1);
    if (!se || !rel || !ob || wr_pieces(sc, 2 * m, err)) {
        free(se);
        free(ob);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    size_t np = 0;
    job->size = 0;
    r = wr_var_bounds(w, sc, job, job->src ? job->src : sc->src, se);
    if (!r)
        r = wr_var_layout(w, sc, job, se, ob, &np);
    *size = job->size;
    free(se);
    if (!r && !(job->data = calloc((size_t)*size ? (size_t)*size : 1, 1)))
        r = tdb_err(err, TDB_E_NOMEM, "out of memory");
    if (!r)
        r = wr_gather(w, sc, f, WR_VALUES, np, job->data, err);
    if (!r)
        r = wr_var_offsets(w, sc, job, ob);
    free(ob);
    struct wr_tile tl = {.p = f->filters, .type = f->type, .cs = f->vsize,
                         .is_var = true, .data = job->data,
                         .size = (size_t)*size, .offs = rel, .noffs = m};
    if (!r)
        r = wr_emit(w, sc, job, WR_OUT_VAR, &tl);
    return r;
}

/* The job's tile of its field: cell k of the tile is staged cell src[k]
 * (WR_NONE: not written: zero bytes, one zero value when var-sized,
 * validity 0); its filtered tiles and metadata. */
static int wr_job_work(const struct wr *w, struct wr_scratch *sc,
                       struct wr_job *job)
{
    const struct wr_field *f = &w->f[job->fi];
    uint64_t size = 0;
    int r = f->var ? wr_job_var(w, sc, job, &size)
                   : wr_job_fixed(w, sc, job, &size);
    if (!r && f->nullable)
        r = wr_validity_tile(w, sc, job);
    job->size = size;
    struct tdb_fmw_tile t = {.data = job->data, .size = size,
                             .offsets = job->rel, .ncells = job->m,
                             .validity = job->valid};
    if (!r)
        r = tdb_fmw_tile_stats(w->fmw, f->fid, job->t, &t, &job->st,
                               &job->err);
    return r;
}

static void wr_job_run(const struct wr *w, struct wr_scratch *sc,
                       struct wr_job *job)
{
    job->nout = 0;
    job->rc = 0;
    memset(&job->err, 0, sizeof job->err);
    job->rc = wr_job_work(w, sc, job);
}

/* Appends the job's filtered tiles, then (done) records its metadata. */
static int wr_job_record(struct wr *w, struct wr_job *job)
{
    struct wr_field *f = &w->f[job->fi];
    uint64_t at[3] = {0, 0, 0};
    int r = 0;
    for (unsigned k = 0; k < job->nout && !r; k++)
        r = wr_append(w, f, job->out[k].o, job->out[k].b.data,
                      job->out[k].b.len, &at[job->out[k].o]);
    if (!r && job->rc) {
        r = job->rc;
        if (w->err)
            *w->err = job->err;
    }
    struct tdb_fmw_where where = {
        .off = at[WR_OUT_FIXED],
        .var_off = f->var ? at[WR_OUT_VAR] : 0,
        .var_size = f->var ? job->size : 0,
        .validity_off = at[WR_OUT_VALIDITY],
    };
    if (!r)
        r = tdb_fmw_add_tile_stats(w->fmw, &where, &job->st, w->err);
    wr_job_clear(job);
    return r;
}

/* Job number s: tile s / nf, field s % nf. */
static void wr_job_init(const struct wr *w, struct wr_job *job, uint64_t s)
{
    job->t = s / w->nf;
    job->fi = (uint32_t)(s % w->nf);
    if (w->dense) {
        job->src = NULL;
        job->m = w->dg.tcells;
    } else {
        uint64_t first = job->t * w->cap, n = w->ncells;
        job->src = w->perm + first;
        job->m = n - first < w->cap ? n - first : w->cap;
    }
}

/* Sparse: after the last field of tile t, its MBR (and the non-empty
 * domain so far). */
static void wr_range_grow(const struct wr *w, struct tdb_range *r, uint32_t j,
                          const struct tdb_coords *co, bool first)
{
    const struct tdb_dim *d = &w->s->dims[j];
    const uint8_t *v = co->v[j];
    uint64_t n = co->n[j];
    if (d->cell_val_num == TDB_VAR_NUM) {
        if (first || tdb_value_cmp(d->type, v, n, r->vlo, r->vlo_size) < 0) {
            r->vlo = (uint8_t *)(uintptr_t)v;
            r->vlo_size = n;
        }
        if (first || tdb_value_cmp(d->type, v, n, r->vhi, r->vhi_size) > 0) {
            r->vhi = (uint8_t *)(uintptr_t)v;
            r->vhi_size = n;
        }
        return;
    }
    if (first || tdb_value_cmp(d->type, v, n, r->lo, n) < 0)
        memcpy(r->lo, v, (size_t)n);
    if (first || tdb_value_cmp(d->type, v, n, r->hi, n) > 0)
        memcpy(r->hi, v, (size_t)n);
}

static int wr_sparse_mbr(struct wr *w, uint64_t t)
{
    uint32_t nd = w->s->ndims;
    uint64_t first = t * w->cap, n = w->ncells;
    uint64_t m = n - first < w->cap ? n - first : w->cap;
    struct tdb_range mbr[TDB_MAX_DIMS];
    memset(mbr, 0, sizeof mbr);
    for (uint64_t k = 0; k < m; k++) {
        struct tdb_coords co;
        tdb_wr_coords(w, w->perm[first + k], &co);
        for (uint32_t j = 0; j < nd; j++) {
            wr_range_grow(w, &mbr[j], j, &co, k == 0);
            wr_range_grow(w, &w->sned[j], j, &co, t == 0 && k == 0);
        }
    }
    return tdb_fmw_add_mbr(w->fmw, mbr, w->err);
}

/* Records job s (and after a sparse tile's last field, its MBR). */
static int wr_job_done(struct wr *w, struct wr_job *job)
{
    int r = wr_job_record(w, job);
    if (!r && !w->dense && job->fi == w->nf - 1)
        r = wr_sparse_mbr(w, job->t);
    return r;
}

/* The pool: workers take queued jobs in order; the calling thread queues
 * up to q jobs ahead of the one it writes next. */
/* The tile jobs on the engine's pool (core/pool.h): job slots for twice
 * as many jobs as threads, each thread's scratch taken from a stack. */
struct wr_pool {
    const struct wr *w;
    pthread_mutex_t mu;
    pthread_cond_t done;
    struct wr_job *jobs;
    unsigned q;
    uint64_t queued;            /* jobs [0, queued) queued */
    struct wr_scratch *sc;      /* nth of them */
    unsigned *free_sc, nfree;   /* those no job holds */
};

/* A job slot on the pool. */
struct wr_task {
    struct tdb_pool_job pj;     /* first: the pool's */
    struct wr_pool *p;
    struct wr_job *job;
};

static void wr_task_run(struct tdb_pool_job *pj)
{
    struct wr_task *t = (struct wr_task *)pj;
    struct wr_pool *p = t->p;
    pthread_mutex_lock(&p->mu);
    unsigned k = p->free_sc[--p->nfree]; /* (a thread each: never empty) */
    pthread_mutex_unlock(&p->mu);
    wr_job_run(p->w, &p->sc[k], t->job);
    pthread_mutex_lock(&p->mu);
    p->free_sc[p->nfree++] = k;
    t->job->state = WR_JOB_DONE;
    pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->mu);
}

/* All the jobs in the calling thread. */
static int wr_jobs_serial(struct wr *w, uint64_t total)
{
    struct wr_scratch sc;
    struct wr_job job;
    wr_scratch_init(&sc);
    memset(&job, 0, sizeof job);
    int r = 0;
    for (uint64_t s = 0; s < total && !r; s++) {
        wr_job_init(w, &job, s);
        wr_job_run(w, &sc, &job);
        r = wr_job_done(w, &job);
    }
    wr_job_free(&job);
    wr_scratch_free(&sc);
    return r;
}

/* The jobs on a pool of nth threads; false in *ran when it could not be
 * made. */
static int wr_jobs_pool(struct wr *w, uint64_t total, unsigned nth, bool *ran)
{
    struct wr_pool p;
    struct tdb_pool *pool = NULL;
    memset(&p, 0, sizeof p);
    p.w = w;
    p.q = 2 * nth;
    p.jobs = calloc(p.q, sizeof *p.jobs);
    struct wr_task *tasks = calloc(p.q, sizeof *tasks);
    p.sc = calloc(nth, sizeof *p.sc);
    p.free_sc = calloc(nth, sizeof *p.free_sc);
    *ran = false;
    if (!p.jobs || !tasks || !p.sc || !p.free_sc ||
        tdb_pool_create(&pool, nth)) {
        free(p.jobs);
        free(tasks);
        free(p.sc);
        free(p.free_sc);
        return 0;
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.done, NULL);
    for (unsigned i = 0; i < nth; i++) {
        wr_scratch_init(&p.sc[i]);
        p.free_sc[p.nfree++] = i;
    }
    int r = 0;
    *ran = true;
    for (uint64_t s = 0; s < total && !r; s++) {
        struct wr_job *job = &p.jobs[s % p.q];
        pthread_mutex_lock(&p.mu);
        while (p.queued < total && p.queued - s < p.q) {
            unsigned slot = (unsigned)(p.queued % p.q);
            struct wr_job *nj = &p.jobs[slot];
            wr_job_init(w, nj, p.queued);
            nj->state = WR_JOB_QUEUED;
            tasks[slot] = (struct wr_task){.pj.run = wr_task_run, .p = &p,
                                           .job = nj};
            tdb_pool_submit(pool, &tasks[slot].pj);
            p.queued++;
        }
        while (job->state != WR_JOB_DONE)
            pthread_cond_wait(&p.done, &p.mu);
        pthread_mutex_unlock(&p.mu);
        r = wr_job_done(w, job);
        job->state = WR_JOB_FREE;
    }
    /* the jobs queued after a failure still run; then the threads stop */
    tdb_pool_free(pool);
    for (unsigned i = 0; i < nth; i++)
        wr_scratch_free(&p.sc[i]);
    for (unsigned i = 0; i < p.q; i++)
        wr_job_free(&p.jobs[i]);
    pthread_cond_destroy(&p.done);
    pthread_mutex_destroy(&p.mu);
    free(p.jobs);
    free(tasks);
    free(p.sc);
    free(p.free_sc);
    return r;
}

/* The tiles' jobs: ntiles tiles of every field. */
static int wr_jobs(struct wr *w, uint64_t ntiles)
{
    uint64_t total;
    if (!tdb_mul_ok(ntiles, w->nf, &total))
        return tdb_err(w->err, TDB_E_UNSUPPORTED, "%llu tiles of %u fields",
                       (unsigned long long)ntiles, w->nf);
    unsigned nth = w->threads;
    if (nth > total)
        nth = (unsigned)total;
    if (nth > 1) {
        bool ran;
        int r = wr_jobs_pool(w, total, nth, &ran);
        if (ran)
            return r;
    }
    return wr_jobs_serial(w, total);
}

/* Dense: the space tiles covering the region in tile order, the cells of
 * each in cell order. */
int tdb_wr_dense_write(struct wr *w)
{
    const struct tdb_schema *s = w->s;
    struct wr_dense *g = &w->dg;
    uint32_t nd = g->nd = s->ndims;
    uint64_t ntiles = 1;
    g->tcells = 1;
    for (uint32_t d = 0; d < nd; d++) {
        g->ext[d] = tdb_dim_tile_span(&s->dims[d]);
        if (!g->ext[d] || g->ext[d] == UINT64_MAX)
            return tdb_err(w->err, TDB_E_UNSUPPORTED, "dimension '%s': no "
                           "usable tile extent", s->dims[d].name);
        g->tlo[d] = w->rlo[d] / g->ext[d];
        g->ntl[d] = w->rhi[d] / g->ext[d] - g->tlo[d] + 1;
        if (!tdb_mul_ok(ntiles, g->ntl[d], &ntiles) ||
            !tdb_mul_ok(g->tcells, g->ext[d], &g->tcells) ||
            g->tcells > TDB_MAX_COUNT)
            return tdb_err(w->err, TDB_E_UNSUPPORTED, "space tiles of more than "
                           "%llu cells", (unsigned long long)TDB_MAX_COUNT);
    }
    g->stride[nd - 1] = 1;
    for (uint32_t d = nd - 1; d-- > 0;)
        g->stride[d] = g->stride[d + 1] * (w->rhi[d + 1] - w->rlo[d + 1] + 1);
    /* the non-empty domain is the region; the builder needs it first */
    struct tdb_range ned[TDB_MAX_DIMS];
    memset(ned, 0, sizeof ned);
    for (uint32_t d = 0; d < nd; d++) {
        tdb_dim_value(&s->dims[d], w->rlo[d], ned[d].lo);
        tdb_dim_value(&s->dims[d], w->rhi[d], ned[d].hi);
    }
    int r = tdb_fmw_set_ned(w->fmw, ned, w->err);
    return r ? r : wr_jobs(w, ntiles);
}

/* Sparse: tiles of `capacity` cells in global order, an MBR per tile. */
int tdb_wr_sparse_write(struct wr *w)
{
    uint64_t cap = w->s->capacity ? w->s->capacity : 1;
    if (cap > TDB_MAX_COUNT)
        cap = TDB_MAX_COUNT;
    w->cap = cap;
    uint64_t n = w->ncells;
    uint64_t ntiles = n / cap + (n % cap != 0);
    tdb_fmw_set_sparse_tiles(w->fmw, ntiles, n - (ntiles - 1) * cap);
    memset(w->sned, 0, sizeof w->sned);
    int r = wr_jobs(w, ntiles);
    return r ? r : tdb_fmw_set_ned(w->fmw, w->sned, w->err);
}
