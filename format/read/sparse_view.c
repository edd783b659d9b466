/* sparse_view.c: sparse cells merged in global order (docs/LAYOUT.md "Sparse
 * arrays: the cells"; FORMAT-NOTES "Order and duplicates"): duplicates
 * resolved newest first, cells outside the open range or deleted by a
 * delete commit dropped.  The merge runs once and is kept as runs. */
#include "read/view.h"

#include <stdlib.h>

struct sparse_cells {
    struct tdb_cells base;
    size_t nfrags;
    struct tdb_frag **frags;    /* oldest first */
    uint64_t t0, t1;
    /* the plan: runs and the view index where each starts */
    size_t nruns, capruns;
    struct tdb_run *runs;
    uint64_t *starts;
    uint64_t merged;            /* cells the merge kept so far */
};

/* A cursor over one fragment's cells in stored order. */
struct sp_cur {
    struct tdb_frag *f;
    struct tdb_cache *cache;
    uint64_t cell, ncells;
    uint64_t tile, first, tcells;
    struct tdb_cache_entry *e[TDB_MAX_DIMS + 1];
    const struct tdb_tile *t[TDB_MAX_DIMS + 1];
    bool pinned;
    struct tdb_coords c;
    uint64_t hilbert;
    uint64_t ts;
    int ts_field;
    bool done;
};

static void sp_unpin(struct sp_cur *k)
{
    if (!k->pinned)
        return;
    uint32_t nd = k->f->fs->ndims;
    for (uint32_t d = 0; d <= nd; d++) {
        if (k->e[d])
            tdb_cache_release(k->cache, k->e[d]);
        k->e[d] = NULL;
    }
    k->pinned = false;
}

/* Points the cursor's coordinates at cell k->cell, pinning its tiles. */
static int sp_load(struct sp_cur *k, struct tdb_error *err)
{
    struct tdb_frag *f = k->f;
    const struct tdb_schema *s = f->fs;
    uint64_t first;
    uint64_t t = tdb_frag_tile_of(f, k->cell, &first);
    if (!k->pinned || t != k->tile) {
        sp_unpin(k);
        k->tile = t;
        k->first = first;
        k->tcells = tdb_frag_tile_cells(f, t);
        k->pinned = true;
        for (uint32_t d = 0; d < s->ndims; d++) {
            int r = f->legacy_coords
                        ? tdb_frag_tile(f, f->dim_field[0] >= 0 ? f->dim_field[0]
                                                                 : (int)s->nattrs,
                                        TDB_PART_LEGACY_DIM + d, t, &k->e[d],
                                        &k->t[d], err)
                        : tdb_frag_tile(f, f->dim_field[d], TDB_PART_VALUES, t,
                                        &k->e[d], &k->t[d], err);
            if (r)
                return r;
        }
        if (k->ts_field >= 0) {
            int r = tdb_frag_tile(f, k->ts_field, TDB_PART_VALUES, t,
                                  &k->e[s->ndims], &k->t[s->ndims], err);
            if (r)
                return r;
        }
    }
    uint64_t i = k->cell - k->first;
    if (i >= k->tcells)
        return tdb_err(err, TDB_E_CORRUPT, "%s: cell %llu beyond tile %llu",
                       f->fm->path, (unsigned long long)k->cell,
                       (unsigned long long)t);
    for (uint32_t d = 0; d < s->ndims; d++) {
        const struct tdb_tile *tl = k->t[d];
        if (tl->offsets) {
            uint64_t a = tl->offsets[i];
            uint64_t b = i + 1 < tl->ncells ? tl->offsets[i + 1] : tl->size;
            k->c.v[d] = tl->data + a;
            k->c.n[d] = b - a;
        } else {
            unsigned vs = tdb_dt_size(s->dims[d].type);
            if ((i + 1) * vs > tl->size)
                return tdb_err(err, TDB_E_CORRUPT, "%s: coordinate tile too short",
                               f->fm->path);
            k->c.v[d] = tl->data + i * vs;
            k->c.n[d] = vs;
        }
    }
    k->ts = f->fm->t2;
    if (k->ts_field >= 0) {
        const struct tdb_tile *tl = k->t[s->ndims];
        if ((i + 1) * 8 > tl->size)
            return tdb_err(err, TDB_E_CORRUPT, "%s: timestamp tile too short",
                           f->fm->path);
        k->ts = tdb_le64(tl->data + i * 8);
    }
    if (s->cell_order == TDB_HILBERT)
        k->hilbert = tdb_hilbert(s, &k->c);
    return 0;
}

/* ----------------------------------------------------- delete conditions */

struct sp_cellview {
    struct sp_cur *k;
    struct tdb_cache_entry *held[8];
    int nheld;
    struct tdb_error *err;
};

static int sp_cell_get(void *arg, const char *name, const uint8_t **val,
                       uint64_t *size, unsigned *type, bool *is_null)
{
    struct sp_cellview *cv = arg;
    struct sp_cur *k = cv->k;
    const struct tdb_schema *s = k->f->fs;
    *is_null = false;
    int d = tdb_schema_dim_index(s, name);
    if (d >= 0) {
        *val = k->c.v[d];
        *size = k->c.n[d];
        *type = s->dims[d].type;
        return 0;
    }
    int a = tdb_schema_attr_index(s, name);
    if (a < 0)
        return tdb_schema_attr_index(k->f->arr->schema, name) >= 0 ? 1
                                                                   : TDB_E_NOENT;
    if (cv->nheld + 2 > 8)
        return TDB_E_NOMEM;
    const struct tdb_attr *at = &s->attrs[a];
    uint64_t i = k->cell - k->first;
    const struct tdb_tile *tl;
    int r = tdb_frag_tile(k->f, a, TDB_PART_VALUES, k->tile,
                          &cv->held[cv->nheld], &tl, cv->err);
    if (r)
        return r;
    cv->nheld++;
    *type = at->type;
    if (tl->offsets) {
        uint64_t b = i + 1 < tl->ncells ? tl->offsets[i + 1] : tl->size;
        *val = tl->data + tl->offsets[i];
        *size = b - tl->offsets[i];
    } else {
        uint64_t cs = (uint64_t)tdb_dt_size(at->type) * at->cell_val_num;
        *val = tl->data + i * cs;
        *size = cs;
    }
    if (at->nullable) {
        const struct tdb_tile *vt;
        r = tdb_frag_tile(k->f, a, TDB_PART_VALIDITY, k->tile,
                          &cv->held[cv->nheld], &vt, cv->err);
        if (r)
            return r;
        cv->nheld++;
        *is_null = vt->data[i] == 0;
    }
    return 0;
}

static bool sp_cell_is_var(void *arg, const char *name)
{
    struct sp_cellview *cv = arg;
    const struct tdb_schema *s = cv->k->f->fs;
    int d = tdb_schema_dim_index(s, name);
    if (d >= 0)
        return s->dims[d].cell_val_num == TDB_VAR_NUM;
    int a = tdb_schema_attr_index(s, name);
    return a < 0 || s->attrs[a].cell_val_num == TDB_VAR_NUM;
}

/* The condition is done with the values it read: unpin their tiles. */
static void sp_cell_release(void *arg)
{
    struct sp_cellview *cv = arg;
    for (int h = 0; h < cv->nheld; h++)
        tdb_cache_release(cv->k->cache, cv->held[h]);
    cv->nheld = 0;
}

static bool sp_processed(const struct tdb_fragmeta *fm, const char *name)
{
    for (uint64_t i = 0; i < fm->nprocessed; i++) {
        const char *p = fm->processed[i];
        const char *slash = strrchr(p, '/');
        const char *base = slash ? slash + 1 : p;
        size_t n = strlen(name);
        if (!strncmp(base, name, n) && (!base[n] || base[n] == '.'))
            return true;
    }
    return false;
}

/* Is the cell under cursor k dropped (outside [t0,t1], deleted)? */
static int sp_dropped(struct sparse_cells *sc, struct sp_cur *k,
                      struct tdb_error *err)
{
    if (k->ts_field >= 0 && (k->ts < sc->t0 || k->ts > sc->t1))
        return 1;
    struct tdb_array *a = sc->base.arr;
    for (size_t i = 0; i < a->nconds; i++) {
        const struct tdb_dir_entry *de = &a->cond_ents[i];
        uint64_t td = de->ts.t1;
        if (td < sc->t0 || td > sc->t1 || k->ts > td)
            continue;
        if (sp_processed(k->f->fm, de->name))
            continue;
        struct sp_cellview cv = {.k = k, .err = err};
        struct tdb_cell_view view = {.get = sp_cell_get, .arg = &cv,
                                     .is_var = sp_cell_is_var,
                                     .release = sp_cell_release};
        int m = tdb_cond_eval(a->conds[i], &view, err);
        sp_cell_release(&cv);
        if (m < 0)
            return tdb_err_ctx(err, m, "delete condition %s", de->name);
        if (m)
            return 1;
    }
    return 0;
}

/* Moves k to its next kept cell (or done). */
static int sp_next_kept(struct sparse_cells *sc, struct sp_cur *k,
                        struct tdb_error *err)
{
    while (k->cell < k->ncells) {
        int r = sp_load(k, err);
        if (r)
            return r;
        r = sp_dropped(sc, k, err);
        if (r < 0)
            return r;
        if (!r)
            return 0;
        k->cell++;
    }
    k->done = true;
    sp_unpin(k);
    return 0;
}

static int sp_emit(struct sparse_cells *sc, struct tdb_frag *f, uint64_t cell)
{
    if (sc->nruns) {
        struct tdb_run *l = &sc->runs[sc->nruns - 1];
        if (l->frag == f && l->fcell + l->count == cell) {
            l->count++;
            sc->merged++;
            return 0;
        }
    }
    if (sc->nruns == sc->capruns) {
        size_t cap = sc->capruns ? sc->capruns * 2 : 64;
        struct tdb_run *r = realloc(sc->runs, cap * sizeof *r);
        if (!r)
            return TDB_E_NOMEM;
        sc->runs = r;
        uint64_t *s = realloc(sc->starts, cap * sizeof *s);
        if (!s)
            return TDB_E_NOMEM;
        sc->starts = s;
        sc->capruns = cap;
    }
    sc->runs[sc->nruns] = (struct tdb_run){f, cell, 1};
    sc->starts[sc->nruns] = sc->merged;
    sc->nruns++;
    sc->merged++;
    return 0;
}

/* Is cell (ts, index) newer than (ts2, index2)? */
static bool sp_newer(const struct sp_cur *a, const struct sp_cur *b)
{
    if (a->ts != b->ts)
        return a->ts > b->ts;
    return a->f->index > b->f->index;
}

static int sparse_prepare(struct tdb_cells *c, struct tdb_error *err)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    struct tdb_array *a = c->arr;
    const struct tdb_schema *s = a->schema;
    bool dups = s->allows_dups;
    size_t n = sc->nfrags;
    struct sp_cur *cur = calloc(n ? n : 1, sizeof *cur);
    if (!cur)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    int r = 0;
    /* ncells stays as it is until the merge is whole: a view counted from
     * the metadata is being stat'ed by other threads meanwhile */
    sc->merged = 0;
    sc->nruns = 0;
    for (size_t i = 0; i < n && !r; i++) {
        cur[i].f = sc->frags[i];
        cur[i].cache = a->cache;
        cur[i].ncells = sc->frags[i]->ncells;
        cur[i].ts_field = tdb_fragmeta_ts_field(sc->frags[i]->fm);
        r = sp_next_kept(sc, &cur[i], err);
    }
    while (!r) {
        /* the smallest head; among equal coordinates the newest first */
        struct sp_cur *m = NULL;
        for (size_t i = 0; i < n; i++) {
            struct sp_cur *k = &cur[i];
            if (k->done)
                continue;
            if (!m) {
                m = k;
                continue;
            }
            int cmp = tdb_order_cmp(s, &k->c, k->hilbert, &m->c, m->hilbert);
            if (cmp < 0 || (cmp == 0 && sp_newer(k, m)))
                m = k;
        }
        if (!m)
            break;
        if (dups) {
            r = sp_emit(sc, m->f, m->cell);
            if (r) {
                r = tdb_err(err, r, "out of memory");
                break;
            }
            m->cell++;
            r = sp_next_kept(sc, m, err);
            continue;
        }
        /* no duplicates: the newest version of these coordinates wins,
         * including versions kept side by side in one fragment */
        struct tdb_coords key = m->c;
        struct tdb_frag *wf = m->f;
        uint64_t wcell = m->cell, wts = m->ts;
        size_t widx = m->f->index;
        /* copy var-sized key bytes: the cursors move on */
        uint8_t keybuf[4096];
        size_t used = 0;
        for (uint32_t d = 0; d < s->ndims; d++) {
            if (key.n[d] <= sizeof keybuf - used) {
                memcpy(keybuf + used, key.v[d], (size_t)key.n[d]);
                key.v[d] = keybuf + used;
                used += (size_t)key.n[d];
            }
        }
        for (size_t i = 0; i < n && !r; i++) {
            struct sp_cur *k = &cur[i];
            while (!k->done && tdb_coords_equal(s, &k->c, &key)) {
                if (k->ts > wts || (k->ts == wts && k->f->index > widx) ||
                    (k->ts == wts && k->f->index == widx && k->cell > wcell)) {
                    wf = k->f;
                    wcell = k->cell;
                    wts = k->ts;
                    widx = k->f->index;
                }
                k->cell++;
                if ((r = sp_next_kept(sc, k, err)))
                    break;
            }
        }
        if (!r && (r = sp_emit(sc, wf, wcell)))
            r = tdb_err(err, r, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        sp_unpin(&cur[i]);
    free(cur);
    /* a view counted from the metadata keeps its count (others read it
     * meanwhile); else the count is published by tdb_cells_prepare */
    bool counted = atomic_load_explicit(&c->counted, memory_order_relaxed);
    if (!r && counted && sc->merged != c->ncells)
        r = tdb_err(err, TDB_E_CORRUPT, "sparse merge kept %llu cells where "
                    "the fragments' metadata counts %llu",
                    (unsigned long long)sc->merged,
                    (unsigned long long)c->ncells);
    if (!r && !counted)
        c->ncells = sc->merged;
    return r;
}

static int sparse_runs(struct tdb_cells *c, uint64_t first, uint64_t n,
                       struct tdb_run *out, size_t cap, size_t *nout,
                       struct tdb_error *err)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    size_t lo = 0, hi = sc->nruns;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (sc->starts[mid] <= first)
            lo = mid;
        else
            hi = mid;
    }
    size_t k = 0;
    uint64_t end = first + n;
    for (size_t i = lo; i < sc->nruns && k < cap && first < end; i++) {
        uint64_t s = sc->starts[i], e = s + sc->runs[i].count;
        if (e <= first)
            continue;
        uint64_t a = first > s ? first : s, b = end < e ? end : e;
        out[k++] = (struct tdb_run){sc->runs[i].frag,
                                    sc->runs[i].fcell + (a - s), b - a};
        first = b;
    }
    *nout = k;
    (void)err;
    return 0;
}

static void sparse_destroy(struct tdb_cells *c)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    free(sc->frags);
    free(sc->runs);
    free(sc->starts);
}

static const struct tdb_cells_ops sparse_ops = {
    .runs = sparse_runs,
    .prepare = sparse_prepare,
    .destroy = sparse_destroy,
};

/* Do the non-empty domains of two fragments intersect? */
static bool sparse_overlap(const struct tdb_schema *s, const struct tdb_fragmeta *x,
                           const struct tdb_fragmeta *y)
{
    if (x->ned_null || y->ned_null)
        return false;
    for (uint32_t d = 0; d < s->ndims; d++) {
        const struct tdb_dim *dim = &s->dims[d];
        const struct tdb_range *a = &x->ned[d], *b = &y->ned[d];
        int c1, c2;
        if (dim->cell_val_num == TDB_VAR_NUM) {
            c1 = tdb_value_cmp(dim->type, a->vlo, a->vlo_size, b->vhi, b->vhi_size);
            c2 = tdb_value_cmp(dim->type, b->vlo, b->vlo_size, a->vhi, a->vhi_size);
        } else {
            unsigned vs = tdb_dt_size(dim->type);
            c1 = tdb_value_cmp(dim->type, a->lo, vs, b->hi, vs);
            c2 = tdb_value_cmp(dim->type, b->lo, vs, a->hi, vs);
        }
        if (c1 > 0 || c2 > 0)
            return false;
    }
    return true;
}

static bool sparse_disjoint(const struct tdb_array *a, struct tdb_frag **frags,
                            size_t n)
{
    if (n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (sparse_overlap(a->schema, frags[i]->fm, frags[j]->fm))
                return false;
    return true;
}

int tdb_cells_sparse(struct tdb_cells **out, struct tdb_array *a,
                     struct tdb_frag **frags, size_t n, uint64_t t0,
                     uint64_t t1, struct tdb_error *err)
{
    struct sparse_cells *sc = calloc(1, sizeof *sc);
    if (!sc)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    sc->base.ops = &sparse_ops;
    sc->base.arr = a;
    pthread_mutex_init(&sc->base.lock, NULL);
    sc->frags = calloc(n ? n : 1, sizeof *sc->frags);
    if (!sc->frags) {
        free(sc);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    memcpy(sc->frags, frags, n * sizeof *frags);
    sc->nfrags = n;
    sc->t0 = t0;
    sc->t1 = t1;
    /* The count is known without decoding when no merge can drop a cell:
     * one fragment, duplicates allowed, or fragments whose non-empty
     * domains do not overlap; and no timestamps, no deletes. */
    bool simple = !a->nconds &&
                  (n <= 1 || a->schema->allows_dups || sparse_disjoint(a, frags, n));
    for (size_t i = 0; i < n && simple; i++)
        simple = !frags[i]->fm->has_timestamps;
    if (simple) {
        for (size_t i = 0; i < n; i++)
            sc->base.ncells += frags[i]->ncells;
        atomic_init(&sc->base.counted, true);
        if (n <= 1) {
            atomic_init(&sc->base.ready, true);
            if (n == 1 && frags[0]->ncells) {
                sc->runs = malloc(sizeof *sc->runs);
                sc->starts = malloc(sizeof *sc->starts);
                if (!sc->runs || !sc->starts) {
                    sparse_destroy(&sc->base);
                    free(sc);
                    return tdb_err(err, TDB_E_NOMEM, "out of memory");
                }
                sc->runs[0] = (struct tdb_run){frags[0], 0, frags[0]->ncells};
                sc->starts[0] = 0;
                sc->nruns = sc->capruns = 1;
            }
        }
    }
    *out = &sc->base;
    return 0;
}
