/* sparse_delete.c: delete conditions applied to a sparse view's cells
 * (docs/LAYOUT.md "Sparse arrays: the cells"; FORMAT-NOTES "Order and
 * duplicates"): a delete commit's condition evaluated over the cell under
 * a merge's cursor, and a consolidation's delete timestamps. */
#include "read/merge.h"

#include <stdlib.h>
#include <string.h>

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
        *val = k->h.c.v[d];
        *size = k->h.c.n[d];
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
    int r = tdb_frag_tile(&(struct tdb_tile_ref){k->f, a, TDB_PART_VALUES,
                                                 k->tile},
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
        r = tdb_frag_tile(&(struct tdb_tile_ref){k->f, a, TDB_PART_VALIDITY,
                                                 k->tile},
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

/* Does path p (a fragment's list of processed deletes) name delete commit
 * `name` (its last part, with or without an extension)? */
static bool sp_names(const char *p, const char *name)
{
    const char *slash = strrchr(p, '/');
    const char *base = slash ? slash + 1 : p;
    size_t n = strlen(name);
    return !strncmp(base, name, n) && (!base[n] || base[n] == '.');
}

static bool sp_processed(const struct tdb_fragmeta *fm, const char *name)
{
    for (uint64_t i = 0; i < fm->nprocessed; i++)
        if (sp_names(fm->processed[i], name))
            return true;
    return false;
}

/* Whether the cell under cursor k meets delete condition i of a: 1 or 0,
 * or an error naming the condition. */
static int sp_cond_meets(const struct tdb_array *a, size_t i,
                         struct sp_cur *k, struct tdb_error *err)
{
    struct sp_cellview cv = {.k = k, .err = err};
    struct tdb_cell_view view = {.get = sp_cell_get, .arg = &cv,
                                 .is_var = sp_cell_is_var,
                                 .release = sp_cell_release};
    int m = tdb_cond_eval(a->conds[i], &view, err);
    sp_cell_release(&cv);
    return m < 0 ? tdb_err_ctx(err, m, "delete condition %s",
                               a->cond_ents[i].name)
                 : m;
}

/* Is the cell under cursor k removed by a delete?  A consolidation that
 * processed deletes recorded when one removed the cell (its delete
 * timestamp): the cell is gone from a view whose open range ends at or
 * after it, and shows in one that ends before (reader_base.cc's delete
 * timestamps condition).  A delete commit applies to the cells no newer
 * than it, inside the open range, unless the fragment lists it as
 * processed.  A fragment without per-cell timestamps takes every commit
 * from its first timestamp on (TileDB cannot tell its cells' times
 * apart: sparse_index_reader_base.cc applies the plain condition to it). */
int tdb_sparse_deleted(struct sparse_cells *sc, struct sp_cur *k,
                       struct tdb_error *err)
{
    if (k->dts != UINT64_MAX && k->dts <= sc->t1)
        return 1;
    struct tdb_array *a = sc->base.arr;
    uint64_t ts = k->ts_field >= 0 ? k->ts : k->f->fm->t1;
    for (size_t i = 0; i < a->nconds; i++) {
        const struct tdb_dir_entry *de = &a->cond_ents[i];
        uint64_t td = de->ts.t1;
        if (td < sc->t0 || td > sc->t1 || ts > td)
            continue;
        if (sp_processed(k->f->fm, de->name))
            continue;
        int m = sp_cond_meets(a, i, k, err);
        if (m)
            return m;
    }
    return 0;
}

/* The fragment's own delete timestamp k->dts comes first: which delete
 * it was, by its name among the array's (*ci; UINT64_MAX: one the array
 * no longer has). */
static int sp_own_delete(const struct tdb_array *a, struct sp_cur *k,
                         uint64_t *ci, struct tdb_error *err)
{
    const struct tdb_fragmeta *fm = k->f->fm;
    uint64_t dci = UINT64_MAX;
    const struct tdb_tile *t = NULL;
    struct tdb_cache_entry *e = NULL;
    int r = 0;
    *ci = UINT64_MAX;
    if (k->dts != UINT64_MAX)
        r = tdb_frag_tile(&(struct tdb_tile_ref){k->f, k->dts_field + 1,
                                                 TDB_PART_VALUES, k->tile},
                          &e, &t, err);
    if (!r && t)
        r = sp_cell_u64(t, k->cell - k->first, &dci,
                        "delete condition index", k->f, err);
    if (e)
        tdb_cache_release(k->cache, e);
    if (r)
        return r;
    for (size_t i = 0; dci < fm->nprocessed && i < a->nconds; i++)
        if (sp_names(fm->processed[dci], a->cond_ents[i].name)) {
            *ci = i;
            break;
        }
    return 0;
}

/* Which delete removed the cell under cursor k (versions: a
 * consolidation keeps it, with when and which): the first delete commit
 * the fragment did not process, no older than the fragment's first
 * timestamp (and than the cell, where it has its own) whose condition
 * the cell meets, unless the fragment's own delete timestamp is earlier
 * (sparse_index_reader_base.cc, sparse_global_order_reader.cc).  Kept in
 * sc->dels when one did, as view cell sc->emitted. */
int tdb_sparse_note_delete(struct sparse_cells *sc, struct sp_cur *k,
                           struct tdb_error *err)
{
    struct tdb_array *a = sc->base.arr;
    const struct tdb_fragmeta *fm = k->f->fm;
    uint64_t cts = UINT64_MAX, ci = UINT64_MAX;
    for (size_t i = 0; i < a->nconds && cts == UINT64_MAX; i++) {
        const struct tdb_dir_entry *de = &a->cond_ents[i];
        uint64_t td = de->ts.t1;
        if (td < fm->t1 || sp_processed(fm, de->name) ||
            (fm->has_timestamps && td <= fm->t2 && k->ts > td))
            continue;
        int m = sp_cond_meets(a, i, k, err);
        if (m < 0)
            return m;
        if (m) {
            cts = td;
            ci = i;
        }
    }
    if (k->dts_field >= 0 && cts >= k->dts) {
        int r = sp_own_delete(a, k, &ci, err);
        if (r)
            return r;
        cts = k->dts;
    }
    if (cts == UINT64_MAX)
        return 0;
    if (sc->ndels == sc->capdels) {
        size_t c = sc->capdels ? 2 * sc->capdels : 64;
        struct tdb_cell_delete *nd = realloc(sc->dels, c * sizeof *nd);
        if (!nd)
            return tdb_err(err, TDB_E_NOMEM, "out of memory");
        sc->dels = nd;
        sc->capdels = c;
    }
    sc->dels[sc->ndels++] = (struct tdb_cell_delete){sc->emitted, cts, ci};
    return 0;
}
