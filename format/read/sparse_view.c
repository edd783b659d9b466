/* sparse_view.c: sparse cells merged in global order (docs/LAYOUT.md "Sparse
 * arrays: the cells"; FORMAT-NOTES "Order and duplicates"): duplicates
 * resolved newest first, cells outside the open range, deleted by a
 * delete commit or (format_spec/fragment.md dt.tdb) marked deleted by a
 * consolidation dropped.  The merge (merge_tournament.c, else
 * merge_heap.c) runs once and is kept as a plan (plan.h). */
#include "read/merge.h"

#include <stdlib.h>
#include <string.h>

static int sparse_prepare(struct tdb_cells *c, struct tdb_error *err)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    /* ncells stays as it is until the merge is whole: a view counted from
     * the metadata is being stat'ed by other threads meanwhile */
    struct tdb_plan pl;
    int r = tdb_merge_tournament(sc, &pl, err);
    if (r == 1)
        r = tdb_merge_heap(sc, &pl, err);
    if (r)
        return r;
    tdb_plan_free(&sc->plan);
    sc->plan = pl;
    if ((r = tdb_plan_open(&sc->plan, sc->frags)))
        return tdb_err(err, r, "out of memory");
    /* a view counted from the metadata keeps its count (others read it
     * meanwhile); else the count is published by tdb_cells_prepare */
    bool counted = atomic_load_explicit(&c->counted, memory_order_relaxed);
    if (counted && pl.merged != c->ncells)
        return tdb_err(err, TDB_E_CORRUPT, "sparse merge kept %llu cells where "
                       "the fragments' metadata counts %llu",
                       (unsigned long long)pl.merged,
                       (unsigned long long)c->ncells);
    if (!counted)
        c->ncells = pl.merged;
    return 0;
}

static int sparse_runs(struct tdb_cells *c, uint64_t first, uint64_t n,
                       struct tdb_runs *rs, struct tdb_error *err)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    struct tdb_run *out = rs->v;
    size_t cap = rs->cap;
    rs->n = 0;
    if (!sc->plan.nck || !cap || !n)
        return 0;
    struct tdb_plan_pos pp;
    int r = tdb_plan_seek(&sc->plan, first, &pp, err);
    if (r)
        return r;
    size_t kk = 0;
    uint64_t end = first + n;
    while (kk < cap && first < end &&
           (pp.p < pp.end || tdb_plan_more(&sc->plan, &pp))) {
        size_t slot;
        uint64_t fcell, count;
        const uint8_t *np;
        tdb_plan_decode(&pp, &slot, &fcell, &count, &np);
        uint64_t e = pp.cell + count;
        uint64_t a0 = first > pp.cell ? first : pp.cell, b = end < e ? end : e;
        out[kk++] = (struct tdb_run){sc->frags[slot], fcell + (a0 - pp.cell),
                                     b - a0};
        first = b;
        if (b < e)
            break;
        pp.next[slot] = fcell + count;
        pp.cell = e;
        pp.p = np;
    }
    rs->n = kk;
    tdb_plan_done(&sc->plan, &pp);
    return 0;
}

/* (views of other kinds are ready from the start) */
int tdb_cells_prepare(struct tdb_cells *c, struct tdb_error *err)
{
    if (atomic_load_explicit(&c->ready, memory_order_acquire))
        return 0;
    pthread_mutex_lock(&c->lock);
    int r = atomic_load_explicit(&c->ready, memory_order_relaxed)
                ? 0
                : sparse_prepare(c, err);
    if (!r) {
        atomic_store_explicit(&c->counted, true, memory_order_release);
        atomic_store_explicit(&c->ready, true, memory_order_release);
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

static void sparse_destroy(struct tdb_cells *c)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    tdb_plan_free(&sc->plan);
    free(sc->frags);
    free(sc->dels);
}

static const struct tdb_cells_ops sparse_ops = {
    .runs = sparse_runs,
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

/* A fragment with per-cell timestamps that the view shows as stored: its
 * whole time span inside the open range (no cell is left out by time),
 * and no two cells of the same coordinates (duplicates allowed, or a
 * consolidation found none: its name is marked, tdb_tsname_marked). */
static bool sp_whole_distinct(const struct tdb_array *a,
                              const struct tdb_frag *f, uint64_t t0,
                              uint64_t t1)
{
    struct tdb_tsname ts;
    if (f->fm->t1 < t0 || f->fm->t2 > t1)
        return false;
    return a->schema->allows_dups ||
           (!tdb_tsname_parse(f->fm->name, &ts) && tdb_tsname_marked(&ts));
}

static int sp_create(struct tdb_cells **out, struct tdb_array *a,
                     struct tdb_frag **frags, size_t n, uint64_t t0,
                     uint64_t t1, bool versions, struct tdb_error *err)
{
    struct sparse_cells *sc = calloc(1, sizeof *sc);
    if (!sc)
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    sc->base.ops = &sparse_ops;
    sc->base.arr = a;
    pthread_mutex_init(&sc->base.lock, NULL);
    size_t nn = n ? n : 1;
    sc->frags = calloc(nn, sizeof *sc->frags);
    if (!sc->frags || tdb_plan_init(&sc->plan, n, false)) {
        tdb_cells_free(&sc->base);
        return tdb_err(err, TDB_E_NOMEM, "out of memory");
    }
    memcpy(sc->frags, frags, n * sizeof *frags);
    sc->nfrags = n;
    sc->t0 = t0;
    sc->t1 = t1;
    sc->versions = versions;
    sc->threads = a->threads;
    tdb_order_key_init(&sc->okey, a->schema);
    /* The count is known without decoding when no merge can drop a cell:
     * one fragment, duplicates allowed, or fragments whose non-empty
     * domains do not overlap; and no timestamps, no deletes (commits or
     * a consolidation's delete timestamps). */
    bool simple = versions ||
                  (!a->nconds && (n <= 1 || a->schema->allows_dups ||
                                  sparse_disjoint(a, frags, n)));
    for (size_t i = 0; i < n && simple && !versions; i++)
        simple = !frags[i]->fm->has_delete_meta &&
                 (!frags[i]->fm->has_timestamps ||
                  (n == 1 && sp_whole_distinct(a, frags[0], t0, t1)));
    if (simple) {
        for (size_t i = 0; i < n; i++)
            sc->base.ncells += frags[i]->ncells;
        atomic_init(&sc->base.counted, true);
        if (n <= 1) {
            /* the fragment as it is stored: no merge */
            if (n == 1 && frags[0]->ncells &&
                (tdb_plan_put(&sc->plan, 0, 0, frags[0]->ncells) ||
                 tdb_plan_end(&sc->plan) || tdb_plan_seal(&sc->plan) ||
                 tdb_plan_open(&sc->plan, sc->frags))) {
                tdb_cells_free(&sc->base);
                return tdb_err(err, TDB_E_NOMEM, "out of memory");
            }
            atomic_init(&sc->base.ready, true);
        }
    }
    *out = &sc->base;
    return 0;
}

int tdb_cells_sparse(struct tdb_cells **out, struct tdb_array *a,
                     const struct tdb_frag_list *fl, uint64_t t0, uint64_t t1,
                     struct tdb_error *err)
{
    return sp_create(out, a, fl->v, fl->n, t0, t1, false, err);
}

int tdb_cells_sparse_versions(struct tdb_cells **out, struct tdb_array *a,
                              struct tdb_frag **frags, size_t n,
                              struct tdb_error *err)
{
    return sp_create(out, a, frags, n, 0, UINT64_MAX, true, err);
}

void tdb_cells_sparse_pool(struct tdb_cells *c, tdb_pool_fn pool, void *arg)
{
    struct sparse_cells *sc = (struct sparse_cells *)c;
    sc->pool = pool;
    sc->pool_arg = arg;
}

size_t tdb_cells_sparse_deletes(const struct tdb_cells *c,
                                const struct tdb_cell_delete **dels)
{
    const struct sparse_cells *sc = (const struct sparse_cells *)c;
    *dels = sc->dels;
    return sc->ndels;
}

struct tdb_plan *tdb_cells_plan(struct tdb_cells *c)
{
    return c->ops == &sparse_ops ? &((struct sparse_cells *)c)->plan : NULL;
}
